package consolidate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/memstream/memstream/consolidate"
)

// A batch decides each fact as if the facts before it had been applied one
// by one: a drain in batches leaves the same observations, evidence and
// history as a drain of one fact per round, which reads everything from
// the database.
func TestBatchedDrainMatchesFactByFact(t *testing.T) {
	t.Parallel()
	var facts []fact
	at := now.AddDate(0, -4, 0)
	next := func() time.Time { at = at.Add(26 * time.Hour); return at }
	for i, p := range paraphrases(12) {
		facts = append(facts, fact{text: p, at: next()})
		if i%4 == 0 {
			facts = append(facts, fact{text: fmt.Sprintf("Alice bought %d new notebooks for the office", i+2), at: next()})
		}
	}
	facts = append(facts,
		fact{text: "Alice lives in Beijing", at: next()},
		fact{text: "Alice still lives in Beijing with her cat", at: next()},
		fact{text: "Bob drinks coffee every morning", at: next()},
		fact{text: "Bob drinks coffee every morning before work", at: next()},
		fact{text: "我住在北京", at: next()},
		fact{text: "Alice moved to Shanghai", at: next()},
		fact{text: "Bob no longer drinks coffee", at: next()},
		fact{text: "我搬到上海了", at: next()},
		fact{text: "Prefers tea over coffee in the morning", at: next(), tags: []string{"project:x"}},
		fact{text: "Prefers tea over coffee in the morning, really", at: next(), tags: []string{"project:x"}},
		fact{text: "Prefers tea over coffee in the morning", at: next()},
		fact{text: "Alice works at Acme", at: next()},
		fact{text: "Alice works at Globex now", at: next()},
	)
	drain := func(batch int) (*env, []obsRow) {
		e := newEnv(t)
		e.persist("alice", facts...)
		e.drain(e.worker(consolidate.Deps{}, consolidate.Config{BatchSize: batch}), "alice")
		return e, e.observations("alice")
	}
	ref, want := drain(1)
	for _, batch := range []int{7, 256} {
		e, got := drain(batch)
		if len(got) != len(want) {
			t.Fatalf("batch %d: %d observations, fact by fact %d:\n%+v\n%+v", batch, len(got), len(want), got, want)
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.Text != w.Text || g.State != w.State || g.Evidence != w.Evidence || g.Proofs != w.Proofs || g.Trend != w.Trend {
				t.Errorf("batch %d: observation %d = %+v, fact by fact %+v", batch, i, g, w)
			}
		}
		q := `SELECT count(*) FROM observation_history`
		if n, m := e.count(q), ref.count(q); n != m {
			t.Errorf("batch %d: %d history rows, fact by fact %d", batch, n, m)
		}
		q = `SELECT count(*) FROM consolidation_queue WHERE bank_id = 'alice'`
		if n := e.count(q); n != 0 {
			t.Errorf("batch %d: %d facts left unconsolidated", batch, n)
		}
	}
}
