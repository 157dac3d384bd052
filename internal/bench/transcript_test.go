package bench_test

import (
	"strings"
	"testing"

	"github.com/memstream/memstream/event"
)

// BenchmarkParseTranscriptLong parses a retain item near the 1 MiB event
// limit that is one long message: its cost must grow with its length, not
// with its length squared, since the retain route parses it in the request.
func BenchmarkParseTranscriptLong(b *testing.B) {
	s := "Ana (user): x\n" + strings.Repeat("some continuation text here\n", 35000) + "Bot (assistant): y"
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if ms, ok := event.ParseTranscript(s); !ok || len(ms) != 2 {
			b.Fatal("not parsed")
		}
	}
}
