package recall

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/timeparse"
)

func TestPreferSlotValues(t *testing.T) {
	now := time.Date(2026, 6, 20, 10, 0, 0, 0, time.UTC)
	mk := func(n byte, typ, text string, daysAgo int, final float64) hydrated {
		h := hydrated{Result: Result{ID: uuid.UUID{n}, Type: typ, Text: text, MentionedAt: now.AddDate(0, 0, -daysAgo)}}
		h.Scores.Final = final
		return h
	}
	input := func() []hydrated {
		return []hydrated{
			mk(1, "experience", "Hugo: We live in Ballard, close to the park.", 120, 0.70),
			mk(2, "observation", "Hugo: We live in Ballard, close to the park.", 1, 0.65),
			mk(3, "world", "A quiet day indoors can be nice.", 10, 0.60),
			mk(4, "world", "My cousin just moved to Denver for a new job.", 2, 0.55),
			mk(5, "experience", "Hugo: We finally moved into the new place in Mission Bay.", 20, 0.50),
		}
	}
	ids := func(hs []hydrated) []byte {
		var out []byte
		for _, h := range hs {
			out = append(out, h.ID[0])
		}
		return out
	}

	// Present value: the newest own fact takes the best slot rank and
	// score, then the older one; the observation (whose time is its
	// latest evidence) goes after the facts, here below the small talk;
	// the cousin's move (a world fact) is not the asker's value.
	hs := input()
	if !preferSlotValues(hs, &query{Request: Request{Query: "Where do I live at the moment?", QueryTime: now}}) {
		t.Fatal("no slot applied")
	}
	if got, want := ids(hs), []byte{5, 1, 3, 2, 4}; string(got) != string(want) {
		t.Errorf("present-value order = %v, want %v", got, want)
	}
	if hs[0].Scores.Final < hs[1].Scores.Final {
		t.Errorf("scores not in order: %v", hs)
	}

	// A period named: the slot values are boosted but not reordered by
	// time, so "where did I live last year" keeps the period-aware order.
	hs = input()
	q := &query{Request: Request{Query: "Where did I live last year?", QueryTime: now}, windows: timeparse.Parse("last year", now)}
	preferSlotValues(hs, q)
	if got, want := ids(hs), []byte{1, 2, 3, 5, 4}; string(got) != string(want) {
		t.Errorf("period order = %v, want %v", got, want)
	}

	// No slot in the query: nothing changes.
	hs = input()
	if preferSlotValues(hs, &query{Request: Request{Query: "What novel did you recommend?", QueryTime: now}}) {
		t.Error("a query without a slot changed the order")
	}
}

func TestNicknames(t *testing.T) {
	has := func(keys []string, k string) bool {
		for _, x := range keys {
			if x == k {
				return true
			}
		}
		return false
	}
	if ks := nicknameKeys("刘洋"); !has(ks, "阿洋") || !has(ks, "ayang") || !has(ks, "洋姐") {
		t.Errorf("nicknameKeys(刘洋) = %v, want 阿洋, ayang, 洋姐 among them", ks)
	}
	if ks := nicknameKeys("Wang Fang"); !has(ks, "fangfang") || !has(ks, "afang") {
		t.Errorf("nicknameKeys(Wang Fang) = %v, want fangfang and afang", ks)
	}
	for _, n := range []string{"Alice Chen", "什么", "武汉大学", "Alice"} {
		if ks := nicknameKeys(n); len(ks) > 0 {
			t.Errorf("nicknameKeys(%q) = %v, want none", n, ks)
		}
	}
	for n, want := range map[string]string{"阿洋": "洋", "芳芳": "芳", "敏姐": "敏", "阿姨": "", "刘洋": ""} {
		g, ok := nicknameGiven(n)
		if g != want || ok != (want != "") {
			t.Errorf("nicknameGiven(%q) = %q, %v, want %q", n, g, ok, want)
		}
	}
}

func TestSeedMentionCap(t *testing.T) {
	pool := 50
	if got := seedMentionCap(pool, 30); got != maxSeedMentions(pool) {
		t.Errorf("tiny bank cap = %d, want %d", got, maxSeedMentions(pool))
	}
	// 300 facts: an entity in more than 60 of them is a hub (the user).
	if got := seedMentionCap(pool, 300); got != 60 {
		t.Errorf("cap for 300 facts = %d, want 60", got)
	}
	// A big bank: the absolute cap holds.
	if got := seedMentionCap(pool, 1_000_000); got != maxSeedMentions(pool) {
		t.Errorf("cap for a big bank = %d, want %d", got, maxSeedMentions(pool))
	}
}
