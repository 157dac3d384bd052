package embed

import (
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// wordPiece is BERT's uncased tokenizer read from a Hugging Face
// tokenizer.json: the BertNormalizer (clean text, space around CJK
// ideographs, strip accents, lowercase), the BertPreTokenizer (split on
// whitespace, each punctuation character a word of its own) and greedy
// longest-match WordPiece with "##" continuations. The test checks its ids
// against the Hugging Face tokenizer's.
type wordPiece struct {
	vocab    map[string]int32
	unk      int32
	maxChars int // longer words are one [UNK]
}

// parseWordPiece reads tokenizer.json and checks that it describes the
// pipeline this tokenizer implements.
func parseWordPiece(b []byte) (*wordPiece, error) {
	var tj struct {
		Normalizer struct {
			Type         string `json:"type"`
			CleanText    bool   `json:"clean_text"`
			ChineseChars bool   `json:"handle_chinese_chars"`
			StripAccents *bool  `json:"strip_accents"`
			Lowercase    bool   `json:"lowercase"`
		} `json:"normalizer"`
		PreTokenizer struct {
			Type string `json:"type"`
		} `json:"pre_tokenizer"`
		Model struct {
			Type     string           `json:"type"`
			Unk      string           `json:"unk_token"`
			Prefix   string           `json:"continuing_subword_prefix"`
			MaxChars int              `json:"max_input_chars_per_word"`
			Vocab    map[string]int32 `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		return nil, err
	}
	n, mo := tj.Normalizer, tj.Model
	strip := n.StripAccents == nil || *n.StripAccents
	if n.Type != "BertNormalizer" || !n.CleanText || !n.ChineseChars || !strip || !n.Lowercase {
		return nil, fmt.Errorf("normalizer %+v: want BertNormalizer with clean_text, handle_chinese_chars, lowercase and accents stripped", n)
	}
	if tj.PreTokenizer.Type != "BertPreTokenizer" {
		return nil, fmt.Errorf("pre_tokenizer %q: want BertPreTokenizer", tj.PreTokenizer.Type)
	}
	if mo.Type != "WordPiece" || mo.Prefix != "##" || mo.MaxChars <= 0 {
		return nil, fmt.Errorf("model %s (prefix %q, max_input_chars_per_word %d): want WordPiece with ##", mo.Type, mo.Prefix, mo.MaxChars)
	}
	for tok, id := range map[string]int32{mo.Unk: minilmUNK, "[UNK]": minilmUNK, "[CLS]": minilmCLS, "[SEP]": minilmSEP} {
		if got, ok := mo.Vocab[tok]; !ok || got != id {
			return nil, fmt.Errorf("vocabulary: %s is %d, want %d", tok, got, id)
		}
	}
	for tok, id := range mo.Vocab {
		if id < 0 || int(id) >= len(mo.Vocab) {
			return nil, fmt.Errorf("vocabulary: %q has id %d of %d", tok, id, len(mo.Vocab))
		}
	}
	return &wordPiece{vocab: mo.Vocab, unk: minilmUNK, maxChars: mo.MaxChars}, nil
}

// Encode appends the ids of text, without [CLS] or [SEP].
func (w *wordPiece) Encode(text string, dst []int32) []int32 {
	var word, key []byte
	flush := func() {
		if len(word) > 0 {
			dst, key = w.word(word, dst, key)
			word = word[:0]
		}
	}
	for _, r := range w.normalize(text) {
		switch {
		case unicode.Is(unicode.Mn, r):
			// Accents, split off by NFD.
		case unicode.IsSpace(r):
			flush()
		case isBertPunct(r):
			flush()
			word = utf8.AppendRune(word, r)
			flush()
		default:
			word = utf8.AppendRune(word, unicode.ToLower(r))
		}
	}
	flush()
	return dst
}

// normalize applies the BertNormalizer's clean-text and CJK steps, then
// NFD; Encode drops the combining marks and lowercases as it splits words.
// (The order matters: İ decomposes to I and a dot before it is lowercased,
// as in the Hugging Face normalizer.)
func (w *wordPiece) normalize(text string) string {
	out := make([]byte, 0, len(text)+8)
	for _, r := range text {
		switch {
		case r == 0 || r == utf8.RuneError || isBertControl(r):
		case unicode.IsSpace(r):
			out = append(out, ' ')
		case isCJKIdeograph(r):
			out = append(out, ' ')
			out = utf8.AppendRune(out, r)
			out = append(out, ' ')
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return norm.NFD.String(string(out))
}

// word appends the WordPiece ids of one pre-tokenized word: the longest
// vocabulary entry from the start, then the longest "##" entry from where
// it ended, and so on; a word with a gap, or of more than maxChars
// characters, is a single [UNK]. key is a buffer for the "##" lookups.
func (w *wordPiece) word(word []byte, dst []int32, key []byte) ([]int32, []byte) {
	if utf8.RuneCount(word) > w.maxChars {
		return append(dst, w.unk), key
	}
	from := len(dst)
	for start := 0; start < len(word); {
		end := len(word)
		id := int32(-1)
		for end > start {
			key = key[:0]
			if start > 0 {
				key = append(key, "##"...)
			}
			key = append(key, word[start:end]...)
			if v, ok := w.vocab[string(key)]; ok {
				id = v
				break
			}
			_, n := utf8.DecodeLastRune(word[start:end])
			end -= n
		}
		if id < 0 {
			return append(dst[:from], w.unk), key
		}
		dst = append(dst, id)
		start = end
	}
	return dst, key
}

// isBertControl reports the characters the BertNormalizer's clean-text step
// drops: Unicode "other" (control, format, private use, unassigned) but
// tab, newline and carriage return, which are whitespace.
func isBertControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	// Everything outside letters, marks, numbers, punctuation, symbols and
	// separators: categories Cc, Cf, Co, Cs and the unassigned Cn.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isBertPunct reports what the BertPreTokenizer splits off as a word of its
// own: ASCII punctuation and symbols (so $, +, ^ and the like) and Unicode
// punctuation.
func isBertPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 33 && r <= 47 || r >= 58 && r <= 64 || r >= 91 && r <= 96 || r >= 123 && r <= 126
	}
	return unicode.IsPunct(r)
}

// isCJKIdeograph reports the CJK Unified and Compatibility Ideograph blocks
// BERT gives a word each (not kana or hangul, which it treats as letters).
func isCJKIdeograph(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF ||
		r >= 0x20000 && r <= 0x2A6DF || r >= 0x2A700 && r <= 0x2B73F ||
		r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}
