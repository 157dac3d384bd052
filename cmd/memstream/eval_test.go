package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/eval"
	"github.com/memstream/memstream/internal/pgtest"
)

// TestEvalGenIsDeterministic checks the command, not only the generator:
// the flags must reach GenConfig, and --size must pick the preset.
func TestEvalGenIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, args ...string) string {
		t.Helper()
		out := filepath.Join(dir, name)
		var stdout, stderr bytes.Buffer
		if err := cmdEval(context.Background(), append([]string{"gen", "--out", out}, args...), &stdout, &stderr); err != nil {
			t.Fatalf("eval gen %v: %v\n%s", args, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), "questions") {
			t.Errorf("eval gen printed no summary: %q", stdout.String())
		}
		return out
	}
	read := func(d string) []byte {
		t.Helper()
		var all []byte
		for _, f := range []string{eval.EventsFile, eval.QuestionsFile, eval.ManifestFile} {
			b, err := os.ReadFile(filepath.Join(d, f))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	a, b, c := read(gen("a", "--seed", "7")), read(gen("b", "--seed", "7")), read(gen("c", "--seed", "8"))
	if !bytes.Equal(a, b) {
		t.Error("the same seed produced different files")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds produced identical files")
	}
	d, err := eval.Load(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if want := eval.Small(); d.Manifest.Banks != (want.Banks+want.CrossLingualBanks)*len(eval.Parts) || d.Manifest.Seed != 7 {
		t.Errorf("manifest %+v does not match the small preset with seed 7", d.Manifest)
	}
	var stderr bytes.Buffer
	if err := cmdEval(context.Background(), []string{"gen", "--out", filepath.Join(dir, "x"), "--size", "huge"}, &bytes.Buffer{}, &stderr); err == nil {
		t.Error("--size huge was accepted")
	}
	if err := cmdEval(context.Background(), []string{"gen"}, &bytes.Buffer{}, &stderr); err == nil {
		t.Error("gen without --out was accepted")
	}
	// --part heldout writes the held-out part only.
	h, err := eval.Load(gen("h", "--part", "heldout"))
	if err != nil {
		t.Fatal(err)
	}
	if h.Manifest.ByPart[eval.PartTuning] != 0 || h.Manifest.ByPart[eval.PartHeldOut] == 0 {
		t.Errorf("--part heldout wrote %v", h.Manifest.ByPart)
	}
	// --part heldout-2 writes the second held-out part only, and the
	// default parts leave it out.
	h2, err := eval.Load(gen("h2", "--part", eval.PartHeldOut2))
	if err != nil {
		t.Fatal(err)
	}
	if len(h2.Manifest.ByPart) != 1 || h2.Manifest.ByPart[eval.PartHeldOut2] == 0 || d.Manifest.ByPart[eval.PartHeldOut2] != 0 {
		t.Errorf("--part heldout-2 wrote %v, the default %v", h2.Manifest.ByPart, d.Manifest.ByPart)
	}
	// So does --part heldout-3 the third.
	h3, err := eval.Load(gen("h3", "--part", eval.PartHeldOut3))
	if err != nil {
		t.Fatal(err)
	}
	if len(h3.Manifest.ByPart) != 1 || h3.Manifest.ByPart[eval.PartHeldOut3] == 0 || d.Manifest.ByPart[eval.PartHeldOut3] != 0 {
		t.Errorf("--part heldout-3 wrote %v, the default %v", h3.Manifest.ByPart, d.Manifest.ByPart)
	}
	// eval run names heldout-3 among the parts it accepts.
	var runErr bytes.Buffer
	if err := cmdEval(context.Background(), []string{"run", filepath.Join(dir, "h3"), "--part", "heldout-4"}, &bytes.Buffer{}, &runErr); err == nil || !strings.Contains(err.Error(), eval.PartHeldOut3) {
		t.Errorf("eval run --part heldout-4: %v", err)
	}
}

// TestEvalRegressionGate is the quality gate of `make test`: the held-out
// part of a small fixed-seed benchmark (eval.Gate) through the real path
// (embedded Kafka, the ingest pipeline, PostgreSQL, the HTTP recall API)
// with the default configuration must keep turn-level recall_any@10 at or
// above eval.GateTurnRecallAny10. A change that makes recall worse fails
// here; one that makes it better should raise the threshold (see
// eval/gate.go). The baselines run too, so the report a failure prints
// says where memstream stands against them.
func TestEvalRegressionGate(t *testing.T) {
	dbURL, _ := pgtest.Schema(t)
	d, err := eval.Generate(eval.Gate())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := d.Write(dir); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Database.URL = dbURL
	cfg.Log.Level = "warn"
	cfg, err = inProcessConfig(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	out, err := runEval(ctx, evalRunOptions{Config: cfg, BenchmarkConfig: eval.BenchmarkConfig{
		Dir: dir, MaxTokens: 2048, Concurrency: 1, Out: &stdout,
		IngestTimeout: 4 * time.Minute,
		// Long enough to see a consolidation worker make progress, short
		// enough not to stall the suite when none is running.
		ConsolidationStall: 5 * time.Second, ConsolidationTimeout: 2 * time.Minute,
	}}, &stderr)
	if err != nil {
		t.Fatalf("eval run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), tail(stderr.String(), 4000))
	}
	if out.DeadLetters != 0 {
		t.Errorf("%d events were dead-lettered; their questions cannot be answered", out.DeadLetters)
	}
	if len(out.Parts) != 1 || out.Parts[0].Part != eval.PartHeldOut {
		t.Fatalf("parts %v, want the held-out part only", out.Parts)
	}
	held := out.Parts[0]
	if held.Main.Overall.Questions != len(d.Questions) {
		t.Fatalf("scored %d questions, the dataset has %d", held.Main.Overall.Questions, len(d.Questions))
	}
	got := held.Main.Overall.Turn.RecallAny10
	t.Logf("held-out turn recall_any@10 = %.3f (gate %.3f); session %.3f; BM25 %.3f, dense %.3f",
		got, eval.GateTurnRecallAny10, held.Main.Overall.Session.RecallAny10,
		held.Baselines[0].Report.Overall.Turn.RecallAny10, held.Baselines[1].Report.Overall.Turn.RecallAny10)
	if got < eval.GateTurnRecallAny10 {
		t.Errorf("held-out turn-level recall_any@10 fell to %.3f, below the gate %.3f:\n%s",
			got, eval.GateTurnRecallAny10, out.Markdown())
	}
	// The reports are the command's product; check they are written and
	// say the same as the returned numbers.
	var fromFile eval.Outcome
	b, err := os.ReadFile(filepath.Join(dir, eval.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fromFile); err != nil {
		t.Fatal(err)
	}
	fp := fromFile.Part(eval.PartHeldOut)
	if fp == nil || len(fp.Bars) != 6 || fp.Bars[0].Measured != got || len(fp.Baselines) != 2 || len(fp.VsBaselines) == 0 {
		t.Fatalf("report.json held-out part %+v does not carry the bars, baselines and comparison of the run", fp)
	}
	if fp.Main.Overall.Turn.RecallAny10 != got {
		t.Errorf("report.json says %.3f, the run measured %.3f", fp.Main.Overall.Turn.RecallAny10, got)
	}
	for _, f := range []string{eval.ReportMD, eval.ChartPNG} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	// Held-out misses are never written out.
	if _, err := os.Stat(filepath.Join(dir, eval.MissesFile)); !os.IsNotExist(err) {
		t.Errorf("%s written for a held-out-only run (err %v)", eval.MissesFile, err)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func TestEvalRunUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "subcommand"},
		{[]string{"bench"}, `unknown subcommand "bench"`},
		{[]string{"run"}, "dataset DIR"},
		{[]string{"run", t.TempDir(), "--skip-ingest"}, "--skip-ingest needs --api"},
		{[]string{"run", t.TempDir(), "--ablation-off", "query_form+change"}, "needs --ablation"},
		{[]string{"run", t.TempDir(), "--ablation", "--ablation-off", "query_form+nope"}, `"nope" is not a heuristic`},
	} {
		err := cmdEval(context.Background(), tc.args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("eval %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
}
