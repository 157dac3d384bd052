package recall

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestPresentQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"Where do I live now?", true},
		{"Who is my boss these days?", true},
		{"Which car do I drive at the moment?", true},
		{"What is my current phone plan?", true},
		{"Do I still play tennis, or not anymore?", true},
		{"她现在住在哪个城市？", true},
		{"Where did I live in 2019?", false},
		{"What days did I swim?", false},
		{"她以前住在哪里？", false},
	} {
		if got := presentQuery(tc.q); got != tc.want {
			t.Errorf("presentQuery(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestChangeQuery(t *testing.T) {
	t.Parallel()
	if got := changeQuery("Where do I live now?"); got != changeFrame+"Where do I live now?" {
		t.Errorf("a present-state question is embedded as %q", got)
	}
	if got := changeQuery("她现在住在哪里？"); !strings.HasPrefix(got, changeFrameZh) {
		t.Errorf("a Chinese present-state question is embedded as %q", got)
	}
	if got := changeQuery("Where did I live in 2019?"); got != "Where did I live in 2019?" {
		t.Errorf("a question about the past is embedded as %q", got)
	}
}

// Of two statements of one state in the head, the newer comes first, each
// head result's score is its own (its present-order key on the head's
// span, never a neighbour's score handed back by position), the list stays
// sorted, and nothing below the head moves.
func TestPresentOrderPutsTheNewerStatementFirst(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	q := &query{Request: Request{QueryTime: now}}
	half := 90 * 24 * time.Hour
	mk := func(id byte, score float64, age time.Duration) hydrated {
		var h hydrated
		h.ID = uuid.UUID{id}
		h.MentionedAt = now.Add(-age)
		h.Scores.Final = score
		return h
	}
	var hs []hydrated
	hs = append(hs, mk(1, 0.80, 200*24*time.Hour)) // the old value, best scored
	hs = append(hs, mk(2, 0.75, 10*24*time.Hour))  // the new value
	for i := 3; i <= presentHead+2; i++ {
		hs = append(hs, mk(byte(i), 0.70-float64(i)/100, 365*24*time.Hour))
	}
	key := map[byte]float64{}
	for _, h := range hs[:presentHead] {
		key[h.ID[0]] = h.Scores.Final / recency(h.factTime(), q, half) * recencyWithFloor(h.factTime(), q, half, 0)
	}
	klo, khi := key[1], key[1]
	for _, k := range key {
		klo, khi = min(klo, k), max(khi, k)
	}
	flo, top := hs[presentHead-1].Scores.Final, hs[0].Scores.Final
	presentOrder(hs, q, half)
	if hs[0].ID != (uuid.UUID{2}) || hs[1].ID != (uuid.UUID{1}) {
		t.Fatalf("head order = %v %v, want the newer statement first", hs[0].ID[0], hs[1].ID[0])
	}
	if hs[0].Scores.Final != top {
		t.Errorf("top score = %g, want the head's top %g", hs[0].Scores.Final, top)
	}
	for _, h := range hs[:presentHead] {
		want := flo + (key[h.ID[0]]-klo)/(khi-klo)*(top-flo)
		if math.Abs(h.Scores.Final-want) > 1e-12 {
			t.Errorf("result %d scores %g, want %g from its own key", h.ID[0], h.Scores.Final, want)
		}
	}
	if hs[1].Scores.Final == 0.75 {
		t.Errorf("the old statement got the new one's score 0.75 handed back by position")
	}
	if !slices.IsSortedFunc(hs, func(a, b hydrated) int {
		if a.Scores.Final > b.Scores.Final {
			return -1
		}
		if a.Scores.Final < b.Scores.Final {
			return 1
		}
		return 0
	}) {
		t.Error("results are not sorted by score after presentOrder")
	}
	for i := presentHead; i < len(hs); i++ {
		if hs[i].ID != (uuid.UUID{byte(i + 1)}) {
			t.Errorf("result %d below the head moved: %v", i, hs[i].ID[0])
		}
	}
}
