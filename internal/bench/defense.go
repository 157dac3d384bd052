package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/internal/bench/samples"
)

// DefenseConfig configures RunDefense. The zero value is usable.
type DefenseConfig struct {
	// SizeBytes is the size of each generated corpus; default 8 MiB.
	SizeBytes int `json:"size_bytes"`
	// MinDuration is how long each measurement repeats; default 1s.
	MinDuration time.Duration `json:"min_duration"`
	// Seed makes the corpora reproducible; default 1.
	Seed uint64 `json:"seed"`
}

// WithDefaults fills unset fields.
func (c DefenseConfig) WithDefaults() DefenseConfig {
	if c.SizeBytes <= 0 {
		c.SizeBytes = 8 << 20
	}
	if c.MinDuration <= 0 {
		c.MinDuration = time.Second
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// DefenseResult is the JSON line `memstream bench defense` prints. Speeds are
// MB/s (10^6 bytes) on one goroutine; the ratios compare against a plain
// strings.Contains of one literal over the same clean text in the same run,
// which is the floor any scanner pays to read its input once.
type DefenseResult struct {
	Bench                string  `json:"bench"`
	CleanMBs             float64 `json:"clean_mb_s"`
	DenseMBs             float64 `json:"dense_mb_s"`
	BaselineContainsMBs  float64 `json:"baseline_contains_mb_s"`
	RatioCleanToContains float64 `json:"ratio_clean_to_contains"`
	RatioDenseToContains float64 `json:"ratio_dense_to_contains"`
	CleanBytes           int     `json:"clean_bytes"`
	DenseBytes           int     `json:"dense_bytes"`
	CleanFindings        int     `json:"clean_findings"`
	// NaiveCardCleanHits counts what an unvalidated "13–19 digits" card
	// regex flags in the clean corpus; CleanFindings is our number on the
	// same text.
	NaiveCardCleanHits int     `json:"naive_card_clean_hits"`
	DensePlanted       int     `json:"dense_planted"`
	DenseFound         int     `json:"dense_found"`
	DenseRecall        float64 `json:"dense_recall"`
	Patterns           int     `json:"patterns"`
	GOMAXPROCS         int     `json:"gomaxprocs"`
	GoVersion          string  `json:"go_version"`
}

// RunDefense generates a clean chat corpus and a secret-dense one, measures
// Scan throughput on both and the strings.Contains baseline on the clean
// one, and checks that every planted secret was found (dense_recall).
func RunDefense(ctx context.Context, cfg DefenseConfig) (DefenseResult, error) {
	cfg = cfg.WithDefaults()
	s, err := defense.NewScanner(defense.ScannerConfig{})
	if err != nil {
		return DefenseResult{}, err
	}
	labels := DefaultLabels()
	clean, _ := samples.Corpus(rand.New(rand.NewPCG(cfg.Seed, 1)), cfg.SizeBytes, false, labels)
	dense, planted := samples.Corpus(rand.New(rand.NewPCG(cfg.Seed, 2)), cfg.SizeBytes, true, labels)

	res := DefenseResult{
		Bench: "defense", CleanBytes: len(clean), DenseBytes: len(dense),
		Patterns: len(s.Patterns()), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		DensePlanted: len(planted),
	}
	res.CleanFindings = len(s.Scan(clean))
	res.NaiveCardCleanHits = len(naiveCard.FindAllStringIndex(clean, -1))
	found := map[[2]int]string{}
	for _, f := range s.Scan(dense) {
		found[[2]int{f.Start, f.End}] = f.Label
	}
	for _, p := range planted {
		if found[[2]int{p.Start, p.End}] == p.Label {
			res.DenseFound++
		}
	}
	if len(planted) > 0 {
		res.DenseRecall = float64(res.DenseFound) / float64(len(planted))
	}

	if res.CleanMBs, err = measure(ctx, cfg.MinDuration, len(clean), func() int { return len(s.Scan(clean)) }); err != nil {
		return res, err
	}
	if res.DenseMBs, err = measure(ctx, cfg.MinDuration, len(dense), func() int { return len(s.Scan(dense)) }); err != nil {
		return res, err
	}
	// The needle is absent, so Contains reads the whole text, like Scan must.
	needle := "sk-ant-api03-"
	if res.BaselineContainsMBs, err = measure(ctx, cfg.MinDuration, len(clean), func() int {
		if strings.Contains(clean, needle) {
			return 1
		}
		return 0
	}); err != nil {
		return res, err
	}
	if res.BaselineContainsMBs > 0 {
		res.RatioCleanToContains = res.CleanMBs / res.BaselineContainsMBs
		res.RatioDenseToContains = res.DenseMBs / res.BaselineContainsMBs
	}
	return res, nil
}

// measure repeats fn until min has passed and returns MB/s. The returned
// ints are summed so the compiler cannot drop the calls.
func measure(ctx context.Context, min time.Duration, size int, fn func() int) (float64, error) {
	if size == 0 {
		return 0, errors.New("defense bench: empty corpus")
	}
	sink, iters := 0, 0
	start := time.Now()
	for {
		sink += fn()
		iters++
		el := time.Since(start)
		if el >= min {
			if sink < 0 {
				return 0, fmt.Errorf("defense bench: impossible sink %d", sink)
			}
			return float64(size) * float64(iters) / el.Seconds() / 1e6, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("defense bench: %w", err)
		}
	}
}

// naiveCard is the checksum-free card rule other memory systems ship; it
// is only used to report how many false positives validation avoids.
var naiveCard = regexp.MustCompile(`\b(?:[0-9][ -]?){12,18}[0-9]\b`)

// DefaultLabels are the labels of the patterns a default scanner runs: what
// the secret-dense corpus plants.
func DefaultLabels() []string {
	var labels []string
	for _, p := range defense.Patterns() {
		if !p.OptIn {
			labels = append(labels, p.Label)
		}
	}
	return labels
}

// Report prints the JSON line to stdout, so it can be recorded as is, and a
// summary for people to stderr.
func (r DefenseResult) Report(stdout, stderr io.Writer) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("bench defense: %w", err)
	}
	fmt.Fprintln(stdout, string(line))
	fmt.Fprintf(stderr, "defense scanner, %d patterns, GOMAXPROCS=%d, %s\n", r.Patterns, r.GOMAXPROCS, r.GoVersion)
	fmt.Fprintf(stderr, "  clean text   %8.1f MB/s  (%.2fx of strings.Contains at %.1f MB/s), %d findings in %d bytes\n",
		r.CleanMBs, r.RatioCleanToContains, r.BaselineContainsMBs, r.CleanFindings, r.CleanBytes)
	fmt.Fprintf(stderr, "  secret-dense %8.1f MB/s  (%.2fx of strings.Contains), found %d of %d planted secrets (recall %.3f)\n",
		r.DenseMBs, r.RatioDenseToContains, r.DenseFound, r.DensePlanted, r.DenseRecall)
	fmt.Fprintf(stderr, "  an unvalidated 13-19 digit card regex flags %d spans in the clean text; Luhn-validated scanning flags %d findings in total\n",
		r.NaiveCardCleanHits, r.CleanFindings)
	return nil
}
