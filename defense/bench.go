package defense

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// BenchConfig configures RunBench. The zero value is usable.
type BenchConfig struct {
	// SizeBytes is the size of each generated corpus; default 8 MiB.
	SizeBytes int `json:"size_bytes"`
	// MinDuration is how long each measurement repeats; default 1s.
	MinDuration time.Duration `json:"min_duration"`
	// Seed makes the corpora reproducible; default 1.
	Seed uint64 `json:"seed"`
}

// WithDefaults fills unset fields.
func (c BenchConfig) WithDefaults() BenchConfig {
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

// BenchResult is the JSON line `memstream bench defense` prints. Speeds are
// MB/s (10^6 bytes) on one goroutine; the ratios compare against a plain
// strings.Contains of one literal over the same clean text in the same run,
// which is the floor any scanner pays to read its input once.
type BenchResult struct {
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

// RunBench generates a clean chat corpus and a secret-dense one, measures
// Scan throughput on both and the strings.Contains baseline on the clean
// one, and checks that every planted secret was found (dense_recall).
func RunBench(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	cfg = cfg.WithDefaults()
	s, err := NewScanner(ScannerConfig{})
	if err != nil {
		return BenchResult{}, err
	}
	clean, _ := genCorpus(rand.New(rand.NewPCG(cfg.Seed, 1)), cfg.SizeBytes, false)
	dense, planted := genCorpus(rand.New(rand.NewPCG(cfg.Seed, 2)), cfg.SizeBytes, true)

	res := BenchResult{
		Bench: "defense", CleanBytes: len(clean), DenseBytes: len(dense),
		Patterns: len(s.patterns), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		DensePlanted: len(planted),
	}
	res.CleanFindings = len(s.Scan(clean))
	res.NaiveCardCleanHits = len(naiveCard.FindAllStringIndex(clean, -1))
	found := map[[2]int]string{}
	for _, f := range s.Scan(dense) {
		found[[2]int{f.Start, f.End}] = f.Label
	}
	for _, p := range planted {
		if found[[2]int{p.start, p.end}] == p.label {
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

// planted records where genCorpus put a secret and what it should be
// labelled.
type planted struct {
	label      string
	start, end int
}

// cleanLines are ordinary chat turns, including the near misses a naive
// scanner flags: commit SHAs, UUIDs, base64 images, "task-1234",
// "skeleton", token counts, URLs without credentials, decimals and dates.
var cleanLines = []string{
	"user: Can you summarize the meeting notes from Tuesday and list the action items?",
	"assistant: Sure. The team agreed to ship the recall API by 2024-06-14 and to review PR #4821 on Friday at 10:30.",
	"user: The commit %SHA% fixed the flaky test in the consumer package.",
	"assistant: Request %UUID% took 231 ms; p99 latency is 412 ms over 10,000 requests.",
	"user: Remember that I prefer green tea over coffee, and my daughter's birthday is in March.",
	"assistant: The task-1234 ticket says the skeleton loader should ask for a token budget of 4096 tokens.",
	"user: Use max_tokens: 1024 and temperature 0.2 for the summarizer; the tokenizer is cl100k_base.",
	"assistant: Order 10023-88 costs $1,299.99 and ships in 3-5 business days.",
	"user: See https://docs.memstream.dev/guide?section=3#recall for details on the API.",
	"user: ![chart](data:image/png;base64,%B64%)",
	"assistant: The password field on the login form should show a strength meter.",
	"user: I moved to Berlin last year and now work as a data engineer at a logistics startup.",
	"assistant: Set the secret name in the Helm chart, not the secret itself.",
	"assistant: ```go\nfunc add(a, b int) int {\n\treturn a + b\n}\n```",
	"user: Version 1.22.3 of the client fixed the rebalance bug; upgrade from 1.21.0.",
	"assistant: The desk-top app and the ask-me-anything session moved to room 4B.",
	"user: Our Postgres runs at postgres://db.internal:5432/app with IAM auth, no static password.",
	"user: 我们明天下午三点在会议室讨论新的推荐系统架构。",
	"assistant: 请把上周的销售数据整理成表格，按地区汇总。",
	"user: 我喜欢周末去爬山，最近去了黄山，风景非常漂亮。",
	"assistant: 这个接口的延迟是 120 毫秒，需要优化到 50 毫秒以内。",
	"user: 用户反馈说登录页面的密码提示不够清楚，请在 v2.3 里修复。",
	"assistant: The order number 4111 1111 1111 1112 failed the checksum, so it is not a card.",
}

// plantWrappers put a secret where chat users paste them: after prose, glued
// to CJK, in inline code, on its own line.
var plantWrappers = [][2]string{
	{"user: here it is ", " thanks"},
	{"user: 我的key是", "谢谢"},
	{"user: try `", "` please"},
	{"user: config below\n", "\nend of config"},
}

// genCorpus builds about size bytes of chat text. With dense set, every
// clean line is followed by a line with a pattern-valid fake secret,
// cycling through all default-on labels.
func genCorpus(r *rand.Rand, size int, dense bool) (string, []planted) {
	g := gen{r}
	var labels []string
	for _, p := range compiledPatterns() {
		if !p.OptIn {
			labels = append(labels, p.Label)
		}
	}
	var b strings.Builder
	b.Grow(size + 4096)
	var out []planted
	for i := 0; b.Len() < size; i++ {
		line := cleanLines[r.IntN(len(cleanLines))]
		line = strings.ReplaceAll(line, "%SHA%", g.str(csHex, 40))
		line = strings.ReplaceAll(line, "%UUID%", g.uuid())
		line = strings.ReplaceAll(line, "%B64%", g.str(csB64, 200))
		b.WriteString(line)
		b.WriteByte('\n')
		if !dense {
			continue
		}
		label := labels[i%len(labels)]
		smp, _ := sampleFor(r, label)
		w := plantWrappers[r.IntN(len(plantWrappers))]
		b.WriteString(w[0])
		b.WriteString(smp.pre)
		start := b.Len()
		b.WriteString(smp.secret)
		out = append(out, planted{label: label, start: start, end: b.Len()})
		b.WriteString(smp.post)
		b.WriteString(w[1])
		b.WriteByte('\n')
	}
	return b.String(), out
}
