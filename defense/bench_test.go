package defense

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestRunBenchReport checks the report's shape and quality fields on a
// small corpus; speeds are measured by `memstream bench defense`, never
// asserted in tests.
func TestRunBenchReport(t *testing.T) {
	t.Parallel()
	res, err := RunBench(context.Background(), BenchConfig{SizeBytes: 256 << 10, MinDuration: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bench != "defense" || res.CleanMBs <= 0 || res.DenseMBs <= 0 || res.BaselineContainsMBs <= 0 || res.RatioCleanToContains <= 0 {
		t.Fatalf("incomplete result %+v", res)
	}
	if res.CleanFindings != 0 {
		t.Errorf("clean corpus produced %d findings", res.CleanFindings)
	}
	if res.DensePlanted == 0 || res.DenseRecall != 1 {
		t.Errorf("dense recall = %v (%d/%d)", res.DenseRecall, res.DenseFound, res.DensePlanted)
	}
	b, _ := json.Marshal(res)
	for _, k := range []string{`"bench":"defense"`, `"clean_mb_s"`, `"dense_mb_s"`, `"baseline_contains_mb_s"`, `"ratio_clean_to_contains"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON %s misses %s", b, k)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunBench(ctx, BenchConfig{SizeBytes: 4096, MinDuration: time.Hour}); err == nil {
		t.Error("cancelled context not honoured")
	}
}

func benchScan(b *testing.B, dense bool) {
	s, err := NewScanner(ScannerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	text, _ := genCorpus(rand.New(rand.NewPCG(1, 2)), 4<<20, dense)
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
	text, _ := genCorpus(rand.New(rand.NewPCG(1, 2)), 4<<20, false)
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
