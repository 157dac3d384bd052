package defense

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func benchScan(b *testing.B, dense bool) {
	s, err := NewScanner(ScannerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	text, _ := corpus(rand.New(rand.NewPCG(1, 2)), 4<<20, dense)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		s.Scan(text)
	}
}

func BenchmarkScanClean(b *testing.B) { benchScan(b, false) }
func BenchmarkScanDense(b *testing.B) { benchScan(b, true) }

// BenchmarkScanMessage measures the per-message cost the pipeline pays:
// one short chat turn at a time.
func BenchmarkScanMessage(b *testing.B) {
	s, err := NewScanner(ScannerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	msg := "user: Can you summarize the meeting notes from Tuesday and list the action items? 我们明天下午三点在会议室讨论。"
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		s.Scan(msg)
	}
}

func BenchmarkContainsBaseline(b *testing.B) {
	text, _ := corpus(rand.New(rand.NewPCG(1, 2)), 4<<20, false)
	b.SetBytes(int64(len(text)))
	n := 0
	for b.Loop() {
		if strings.Contains(text, "sk-ant-api03-") {
			n++
		}
	}
	if n != 0 {
		b.Fatal("needle unexpectedly present")
	}
}
