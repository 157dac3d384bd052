package event_test

import (
	"testing"

	"github.com/memstream/memstream/event"
)

func TestBankOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"valid event", "", `{"bank_id":"alice","content":"x"}`, "alice"},
		{"bank after other fields", "", `{"messages":[{"role":"user","content":"{\"bank_id\":\"no\"}"}],"bank_id":"alice"}`, "alice"},
		{"truncated JSON", "", `{"bank_id": "alice", "content": `, "alice"},
		{"invalid UTF-8 later", "", "{\"bank_id\":\"alice\",\"content\":\"\xff\xfe\"}", "alice"},
		{"nested bank_id is not the event's", "", `{"metadata":{"bank_id":"mallory"},"content":"x"`, ""},
		{"invalid bank id", "", `{"bank_id":"../etc","content":"x"}`, ""},
		{"invalid bank id, key names one", "alice/d1", `{"bank_id":"../etc"}`, "alice"},
		{"not JSON, key bank/doc", "carol/d1", `not json`, "carol"},
		{"key without slash is not a bank", "carol", `[1,2]`, ""},
		{"key not a bank", "../x/y", `nope`, ""},
		{"nothing", "", ``, ""},
		{"bank_id not a string", "", `{"bank_id": 7}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := event.BankOf([]byte(tc.key), []byte(tc.value)); got != tc.want {
				t.Errorf("BankOf(%q, %q) = %q, want %q", tc.key, tc.value, got, tc.want)
			}
		})
	}
}

func FuzzBankOf(f *testing.F) {
	f.Add([]byte("alice/d"), []byte(`{"bank_id":"alice"}`))
	f.Add([]byte(""), []byte(`{"bank_id": "a", "x": [`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if b := event.BankOf(key, value); b != "" && !event.BankIDPattern.MatchString(b) {
			t.Fatalf("BankOf returned %q, not a valid bank id", b)
		}
	})
}
