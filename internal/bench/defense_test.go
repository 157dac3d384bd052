package bench

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestRunDefenseReport checks the report's shape and quality fields on a
// small corpus; speeds are measured by `memstream bench defense`, never
// asserted in tests.
func TestRunDefenseReport(t *testing.T) {
	t.Parallel()
	res, err := RunDefense(context.Background(), DefenseConfig{SizeBytes: 256 << 10, MinDuration: 10 * time.Millisecond})
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
	if _, err := RunDefense(ctx, DefenseConfig{SizeBytes: 4096, MinDuration: time.Hour}); err == nil {
		t.Error("cancelled context not honoured")
	}
}
