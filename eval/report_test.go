package eval

import (
	"bytes"
	"encoding/json"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./eval -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file; diff it with -update and git diff.\ngot:\n%s", path, got)
	}
}

func TestMarkdownGolden(t *testing.T) {
	t.Parallel()
	r := scoreFixture(t, ScoreOptions{Name: "fixture", TokenBudget: 12, AbstentionPercentile: 50})
	golden(t, "report.golden.md", r.Markdown())
}

func TestAblationGolden(t *testing.T) {
	t.Parallel()
	base := scoreFixture(t, ScoreOptions{Name: "all arms", TokenBudget: 12, AbstentionPercentile: 50})
	qs, as := fixture()
	// "semantic only" loses q1's evidence and answers faster.
	as[0].Results = as[0].Results[:1]
	for i := range as {
		as[i].Latency /= 2
	}
	semantic, err := Score(qs, as, ScoreOptions{Name: "semantic only", TokenBudget: 12, AbstentionPercentile: 50})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "ablation.golden.md", AblationMarkdown([]Arm{{"all arms", base}, {"semantic only", semantic}}))
	if AblationMarkdown(nil) == "" {
		t.Error("empty ablation renders nothing")
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	t.Parallel()
	r := scoreFixture(t, ScoreOptions{Name: "fixture"})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Markdown() != r.Markdown() {
		t.Error("report changed through JSON")
	}
	if !bytes.Contains(b, []byte(`"recall_any@10"`)) {
		t.Errorf("JSON lacks LongMemEval metric names: %s", b)
	}
}

func TestWriteChartIsAPNG(t *testing.T) {
	t.Parallel()
	r := scoreFixture(t, ScoreOptions{Name: "fixture"})
	path := filepath.Join(t.TempDir(), "recall.png")
	if err := r.WriteChart(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("chart is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 200 || b.Dy() < 100 {
		t.Errorf("chart is only %v", b)
	}
	if err := r.WriteChart(filepath.Join(t.TempDir(), "recall.svg")); err == nil {
		t.Error("WriteChart accepted a non-PNG path")
	}
	if err := (Report{}).WriteChart(path); err == nil {
		t.Error("WriteChart drew an empty report")
	}
}
