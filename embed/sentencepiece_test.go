package embed

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSentencePieceMatchesReference checks the tokenizer against the ids
// SentencePiece itself (the Python package, version 0.2) gives for the same
// model: scripts, full-width forms, ligatures, spaces, emoji.
func TestSentencePieceMatchesReference(t *testing.T) {
	t.Parallel()
	dir := testModelDir(t)
	raw, err := os.ReadFile(filepath.Join(dir, useTokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := parseSentencePiece(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "use_m3_tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		got := tok.Encode(c.Text, nil)
		if !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
			t.Errorf("Encode(%q)\n got %v\nwant %v\nnormalized %q", c.Text, got, c.IDs, tok.normalize(c.Text))
		}
	}
}

func TestSentencePieceRejectsGarbage(t *testing.T) {
	t.Parallel()
	for _, b := range [][]byte{nil, {0xff, 0xff}, {0x0a, 0x05, 'a'}} {
		if _, err := parseSentencePiece(b); err == nil {
			t.Errorf("parseSentencePiece(%x): want error", b)
		}
	}
}
