package demo

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadCountsEventsPerBank(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "chat.jsonl")
	data := `{"bank_id":"alice","content":"a"}` + "\n\n" + `{"bank_id":"bob","content":"b"}` + "\n" + `{"bank_id":"alice","content":"c"}` + "\n"
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if s.expected["alice"] != 2 || s.expected["bob"] != 1 || len(s.expected) != 2 {
		t.Errorf("expected %v", s.expected)
	}
	if err := os.WriteFile(file, []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a broken file: %v, want an error naming it", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.jsonl")); err == nil {
		t.Error("a missing file was accepted")
	}
}

// TestTheDemoShipsItsChatLog: the binary carries the chat log, so the
// demo runs from any directory, and the copy under examples/ (a link to
// it) is the same data.
func TestTheDemoShipsItsChatLog(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range questions {
		if s.expected[q.bank] == 0 {
			t.Errorf("question %q asks bank %s, which the demo chat log does not fill", q.query, q.bank)
		}
	}
	if want := map[string]int{"alice": 14, "zhang-wei": 12, "support-team": 12}; !maps.Equal(s.expected, want) {
		t.Errorf("built-in chat log has events per bank %v, want %v (examples/chatlogs/README.md)", s.expected, want)
	}
	ex, err := Load("../examples/chatlogs/demo.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(ex.expected, s.expected) {
		t.Errorf("examples/chatlogs/demo.jsonl has %v, the built-in log %v", ex.expected, s.expected)
	}
}
