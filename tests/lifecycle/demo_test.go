package lifecycle

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/internal/proctest"
)

// TestDemoShowsWhatItLearned runs `memstream demo --exit` as a new user
// would, twice on one deployment (the second run finds its mental model
// already there and refreshes it), and checks that every part of what it
// prints has content: the recall answers, the observation with its
// evidence, a reflect answer with the sources it rests on, and the mental
// model's text, which an asynchronous operation writes.
func TestDemoShowsWhatItLearned(t *testing.T) {
	s := newSite(t)
	for run := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		cmd := exec.CommandContext(ctx, proctest.Binary(t), "demo", "--exit",
			"--file", filepath.Join(proctest.RepoRoot(), "examples", "chatlogs", "demo.jsonl"))
		cmd.Dir = s.dir
		cmd.Env = append(os.Environ(),
			"MEMSTREAM_DATA_DIR="+s.dir,
			"MEMSTREAM_DATABASE_URL="+s.dbURL,
			"MEMSTREAM_KAFKA_EMBEDDED_ADDR="+s.kafka,
			"MEMSTREAM_HTTP_ADDR="+s.http,
			"MEMSTREAM_LOG_LEVEL=warn",
		)
		out, err := cmd.CombinedOutput()
		cancel()
		text := string(out)
		if err != nil {
			t.Fatalf("run %d: demo: %v\n%s", run, err, proctest.Tail(text, 40))
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`ingested: .*alice: 14/14 events`),
			regexp.MustCompile(`\? \[alice\] Where does Alice live now\?\n   1\. .*Shanghai`),
			regexp.MustCompile(`== observation \(proof_count [1-9]`),
			regexp.MustCompile(`based on [0-9]+ observations, [0-9]+ facts`),
			regexp.MustCompile(`== mental model "email-style" [^\n]*\n   \S`),
		} {
			if !want.MatchString(text) {
				t.Errorf("run %d: the demo's output lacks %q:\n%s", run, want, proctest.Tail(text, 60))
			}
		}
		if strings.Contains(text, "based on 0 observations, 0 facts") {
			t.Errorf("run %d: the reflect answer names no source:\n%s", run, proctest.Tail(text, 30))
		}
	}
}
