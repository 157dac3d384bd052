package event

import (
	"bytes"
	"encoding/json"
)

// BankOf recovers the bank of a record that could not be decoded, so that
// its dead letter counts for that bank (stats events_dead_lettered): the
// value's top-level "bank_id" when it is a valid bank id, read as far as
// the JSON goes (a truncated, oversized or otherwise invalid event still
// names its bank), else, for a key of the recommended form
// bank_id/document_id, the part before the first "/" when that is a valid
// bank id. A key without "/" is some other producer's key, not a bank. It
// returns "" when neither names a valid bank.
func BankOf(key, value []byte) string {
	if b := bankInJSON(value); BankIDPattern.MatchString(b) {
		return b
	}
	if k, _, ok := bytes.Cut(key, []byte("/")); ok && BankIDPattern.Match(k) {
		return string(k)
	}
	return ""
}

// bankInJSON returns the top-level "bank_id" string of value, or "".
func bankInJSON(value []byte) string {
	dec := json.NewDecoder(bytes.NewReader(value))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if k, _ := tok.(string); k == "bank_id" {
			v, err := dec.Token()
			if err != nil {
				return ""
			}
			s, _ := v.(string)
			return s
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}
