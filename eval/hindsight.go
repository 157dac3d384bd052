package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Targets of a benchmark run: whose HTTP API the events are retained into
// and the questions asked of.
const (
	// TargetMemstream is memstream's own API (the default).
	TargetMemstream = "memstream"
	// TargetHindsight is Hindsight's API (hindsight-api-slim 1.1.0), which
	// memstream's retain and recall routes are a drop-in for. The runner
	// adapts only what differs: a per-message item's document id, how
	// stored units map back to turns, and what it waits on.
	TargetHindsight = "hindsight"
)

// HindsightItemOf is the retain item for Hindsight of one event: the item
// RetainItemOf makes, except that an event holding one message of a
// longer session gets a document of its own, "<session>#<turn>".
// Hindsight replaces a document when an item names it again (update_mode
// "replace", its default), so per-message items sharing the session's id
// would keep only each session's last message. The "#<turn>" suffix is
// what HindsightRecaller reads the turn back from.
func HindsightItemOf(e Event) RetainItem {
	it := RetainItemOf(e)
	if off, ok := e.Metadata[TurnOffsetKey]; ok {
		it.DocumentID = e.DocumentID + "#" + off
	}
	return it
}

// ChunkTurns maps what Hindsight stores back to the dataset's turns. In
// its chunks mode a retained item is cut into chunks of up to 3,000
// characters and each chunk is one memory unit, so a unit of a session
// item holds several turns: it is credited with every turn whose
// transcript line it contains (or, where a chunk boundary cut a line, a
// fragment of at least chunkFragmentMin characters of it).
type ChunkTurns struct {
	lines map[string][]string // session → normalised transcript line of each turn
}

// chunkFragmentMin is the shortest cut-off piece of a line that still
// credits its turn: shorter ones ("Sounds good.") occur in many turns.
const chunkFragmentMin = 24

// NewChunkTurns indexes the transcript lines of every turn of d, as
// RetainItemOf writes them.
func NewChunkTurns(d *Dataset) *ChunkTurns {
	c := &ChunkTurns{lines: map[string][]string{}}
	for _, e := range d.Events {
		off := 0
		if v, ok := e.Metadata[TurnOffsetKey]; ok {
			off, _ = strconv.Atoi(v)
		}
		ls := c.lines[e.DocumentID]
		for i, m := range e.Messages {
			t := off + i
			for len(ls) <= t {
				ls = append(ls, "")
			}
			ls[t] = normSpace(TranscriptLine(m))
		}
		c.lines[e.DocumentID] = ls
	}
	return c
}

// Turns returns the session and the turns of one stored unit, from its
// document id and text. A per-message document ("<session>#<turn>") is
// that turn; a session document is every turn the text holds.
func (c *ChunkTurns) Turns(documentID, text string) (string, []int) {
	if i := strings.LastIndexByte(documentID, '#'); i > 0 {
		if t, err := strconv.Atoi(documentID[i+1:]); err == nil && t >= 0 {
			if _, ok := c.lines[documentID[:i]]; ok {
				return documentID[:i], []int{t}
			}
		}
	}
	lines := c.lines[documentID]
	whole := normSpace(text)
	var pieces []string
	for _, p := range strings.Split(text, "\n") {
		if p = normSpace(p); p != "" {
			pieces = append(pieces, p)
		}
	}
	var turns []int
	for t, l := range lines {
		if l == "" {
			continue
		}
		hit := strings.Contains(whole, l)
		for _, p := range pieces {
			if hit {
				break
			}
			hit = len(p) >= chunkFragmentMin && strings.Contains(l, p)
		}
		if hit {
			turns = append(turns, t)
		}
	}
	return documentID, turns
}

// Retrieved is one Hindsight result as the scorer sees it: one turn, or
// several as its Sources.
func (c *ChunkTurns) Retrieved(id, documentID, text string, score float64) Retrieved {
	session, turns := c.Turns(documentID, text)
	r := Retrieved{ID: id, Text: text, SessionID: session, TurnIndex: UnknownTurn, Score: score}
	switch len(turns) {
	case 0:
	case 1:
		r.TurnIndex = turns[0]
	default:
		for _, t := range turns {
			r.Sources = append(r.Sources, Evidence{SessionID: session, TurnIndex: t})
		}
	}
	return r
}

func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// HindsightRecaller implements Recaller over Hindsight's
// POST /v1/default/banks/{bank}/memories/recall: the question, the
// max_tokens budget and the query_timestamp, nothing memstream-only
// (arms, fusion, heuristics_off). Its results are chunks, mapped to turns
// by ChunkTurns.
type HindsightRecaller struct {
	api   *APIRecaller
	turns *ChunkTurns
}

// NewHindsightRecaller asks through api's client and budget.
func NewHindsightRecaller(api *APIRecaller, turns *ChunkTurns) *HindsightRecaller {
	return &HindsightRecaller{api: api, turns: turns}
}

type hindsightRecallRequest struct {
	Query          string `json:"query"`
	MaxTokens      int    `json:"max_tokens"`
	QueryTimestamp string `json:"query_timestamp,omitempty"`
}

// Recall asks one question; the latency is the HTTP round trip.
func (h *HindsightRecaller) Recall(ctx context.Context, bankID, query string, queryTime time.Time) ([]Retrieved, time.Duration, error) {
	body := hindsightRecallRequest{Query: query, MaxTokens: h.api.cfg.MaxTokens}
	if !queryTime.IsZero() {
		body.QueryTimestamp = queryTime.UTC().Format(time.RFC3339)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, 0, fmt.Errorf("encode recall request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, h.api.cfg.Timeout)
	defer cancel()
	began := time.Now()
	var out apiRecallResponse
	if err := h.api.call(ctx, http.MethodPost, bankPath(bankID)+"/memories/recall", b, &out); err != nil {
		return nil, time.Since(began), fmt.Errorf("recall bank %s: %w", bankID, err)
	}
	took := time.Since(began)
	return h.results(out), took, nil
}

func (h *HindsightRecaller) results(out apiRecallResponse) []Retrieved {
	res := make([]Retrieved, 0, len(out.Results))
	for _, x := range out.Results {
		res = append(res, h.turns.Retrieved(x.ID, x.DocumentID, x.Text, x.Scores.Final))
	}
	return res
}

// hindsightIdle waits until no bank has a pending operation. The retains
// were synchronous, so this is normally at once.
func hindsightIdle(ctx context.Context, api *APIRecaller, banks []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pending := 0
		for _, b := range banks {
			var st struct {
				Pending int `json:"pending_operations"`
			}
			if err := api.call(ctx, http.MethodGet, bankPath(b)+"/stats", nil, &st); err != nil {
				return fmt.Errorf("eval: stats of bank %s: %w", b, err)
			}
			pending += st.Pending
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("eval: %d operations still pending after %s", pending, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// ChunkStats describes the units Hindsight stored: how many, and how many
// turns each holds, so a reader sees how much one result carries.
type ChunkStats struct {
	Units        int     `json:"units"`
	MeanTurns    float64 `json:"mean_turns_per_unit"`
	MaxTurns     int     `json:"max_turns_per_unit"`
	UnmappedUnit int     `json:"units_without_a_turn"`
}

// hindsightStored lists every unit of every bank and maps it to turns, for
// the evidence coverage.
func hindsightStored(ctx context.Context, api *APIRecaller, turns *ChunkTurns, banks []string) (map[Evidence]bool, ChunkStats, error) {
	const pageSize = 1000
	out := map[Evidence]bool{}
	var st ChunkStats
	total := 0
	for _, b := range banks {
		for offset := 0; ; offset += pageSize {
			var page struct {
				Items []struct {
					Text       string `json:"text"`
					DocumentID string `json:"document_id"`
				} `json:"items"`
				Total int `json:"total"`
			}
			path := fmt.Sprintf("%s/memories/list?limit=%d&offset=%d", bankPath(b), pageSize, offset)
			if err := api.call(ctx, http.MethodGet, path, nil, &page); err != nil {
				return nil, st, fmt.Errorf("eval: list memories of bank %s: %w", b, err)
			}
			for _, it := range page.Items {
				session, ts := turns.Turns(it.DocumentID, it.Text)
				st.Units++
				total += len(ts)
				st.MaxTurns = max(st.MaxTurns, len(ts))
				if len(ts) == 0 {
					st.UnmappedUnit++
				}
				for _, t := range ts {
					out[Evidence{SessionID: session, TurnIndex: t}] = true
				}
			}
			if len(page.Items) < pageSize || offset+pageSize >= page.Total {
				break
			}
		}
	}
	if st.Units > 0 {
		st.MeanTurns = float64(total) / float64(st.Units)
	}
	return out, st, nil
}

// targetError says why the run's options do not fit its target, if they don't.
func (c BenchmarkConfig) targetError() error {
	switch {
	case !slices.Contains([]string{TargetMemstream, TargetHindsight}, c.Target):
		return fmt.Errorf("eval: BenchmarkConfig.Target %q is not %s or %s", c.Target, TargetMemstream, TargetHindsight)
	case c.Target == TargetHindsight && c.Ingest != IngestRetain && !c.SkipIngest:
		return fmt.Errorf("eval: target %s takes its events through HTTP retain (--ingest %s)", TargetHindsight, IngestRetain)
	case c.Target == TargetHindsight && (c.Ablation || len(c.Arms) > 0):
		return fmt.Errorf("eval: target %s has no arms or heuristic switches to ablate", TargetHindsight)
	}
	return nil
}
