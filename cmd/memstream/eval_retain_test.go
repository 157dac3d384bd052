package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/config"
	"github.com/memstream/memstream/eval"
	"github.com/memstream/memstream/internal/pgtest"
)

// TestEvalRetainIngest runs `eval run --ingest retain` end to end: the
// tuning part of the small dataset goes through HTTP retain (session
// transcripts, and one "Name (role): text" item per message for the
// per-message banks) into a real in-process stack, and the same events,
// under other bank names, through Kafka into the same stack. What retain
// stored must be what Kafka stored, turn by turn and fact by fact, with
// the same context and times: a message that the transcript rendering or
// parsing drops, merges, mislabels or re-dates shows up here as a
// differing turn. A retried retain must not
// store anything twice, and recall must find an evidence turn.
func TestEvalRetainIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests a dataset twice through the real stack")
	}
	dbURL, _ := pgtest.Schema(t)
	gc := eval.Small()
	gc.Parts = []string{eval.PartTuning}
	d, err := eval.Generate(gc)
	if err != nil {
		t.Fatal(err)
	}
	if d.Manifest.PerMessageBanks == 0 || d.Manifest.PerMessageBanks == d.Manifest.Banks {
		t.Fatalf("manifest %+v: the test needs banks of both deliveries", d.Manifest)
	}
	retainDir, kafkaDir := t.TempDir(), t.TempDir()
	if err := d.Write(retainDir); err != nil {
		t.Fatal(err)
	}
	const kafkaPrefix = "k-"
	if err := renamedBanks(d, kafkaPrefix).Write(kafkaDir); err != nil {
		t.Fatal(err)
	}

	cfg := config.Default()
	cfg.Database.URL = dbURL
	cfg.Log.Level = "warn"
	// What is compared is what ingestion stores, which no embedder
	// changes; the hashed one keeps the test fast.
	cfg.Embed.Provider = "hash"
	cfg, err = inProcessConfig(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	p, err := serveInProcess(ctx, cfg, cfg.Log.NewLogger(&stderr))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	base := "http://" + p.addr
	run := func(dir, ingest string) *eval.Outcome {
		t.Helper()
		var stdout bytes.Buffer
		deps := eval.BenchmarkDeps{Produce: func(ctx context.Context, file string) (int, error) {
			return broker.ProduceFile(ctx, p.a.prod, file, cfg.Kafka.Topics[0], "", io.Discard)
		}}
		out, err := eval.RunBenchmark(ctx, deps, eval.BenchmarkConfig{
			Dir: dir, BaseURL: base, Ingest: ingest, NoBaselines: true, NoFiles: true, Out: &stdout,
			IngestTimeout: 4 * time.Minute, ConsolidationStall: 5 * time.Second, ConsolidationTimeout: 2 * time.Minute,
		})
		if err != nil {
			t.Fatalf("eval run --ingest %s: %v\nstdout:\n%s\nstderr:\n%s", ingest, err, stdout.String(), tail(stderr.String(), 4000))
		}
		return out
	}
	ret := run(retainDir, eval.IngestRetain)
	kaf := run(kafkaDir, eval.IngestKafka)

	// Every evidence turn produced a stored fact, nothing was
	// dead-lettered.
	for _, o := range []*eval.Outcome{ret, kaf} {
		if o.DeadLetters != 0 {
			t.Errorf("--ingest %s: %d events dead-lettered", o.Ingest, o.DeadLetters)
		}
		part := o.Part(eval.PartTuning)
		if part == nil {
			t.Fatalf("--ingest %s: no tuning part in %+v", o.Ingest, o.Parts)
		}
		if c := part.Coverage; c.EvidenceTurns == 0 || c.StoredTurns != c.EvidenceTurns {
			t.Errorf("--ingest %s: %d of %d evidence turns stored; lost %+v", o.Ingest, c.StoredTurns, c.EvidenceTurns, c.Lost)
		}
	}

	// Turn by turn, retain stored the facts Kafka stored.
	banks := map[string]bool{}
	for _, e := range d.Events {
		banks[e.BankID] = true
	}
	total := 0
	for _, b := range slices.Sorted(maps.Keys(banks)) {
		rf, kf := listFacts(ctx, t, base, b), listFacts(ctx, t, base, kafkaPrefix+b)
		total += len(rf)
		if diff := factsDiff(rf, kf); diff != "" {
			t.Errorf("bank %s: retain stored %d facts, Kafka %d; they differ:\n%s", b, len(rf), len(kf), diff)
		}
	}
	if total == 0 {
		t.Fatal("retain stored no facts")
	}

	// A retried retain is harmless: the same item again stores nothing
	// new, for a session and for a single message.
	var session, message *eval.Event
	for i := range d.Events {
		e := &d.Events[i]
		if len(e.Messages) > 1 && session == nil {
			session = e
		}
		if len(e.Messages) == 1 && message == nil {
			message = e
		}
	}
	for _, e := range []*eval.Event{session, message} {
		before := len(listFacts(ctx, t, base, e.BankID))
		retainAgain(ctx, t, base, *e)
		if after := len(listFacts(ctx, t, base, e.BankID)); after != before {
			t.Errorf("retaining event %s (%d messages) again: bank %s has %d facts, had %d", e.EventID, len(e.Messages), e.BankID, after, before)
		}
	}

	// Recall finds the evidence: the run's own score, and one evidence
	// turn of a per-message bank asked for by what it says.
	if got := ret.Part(eval.PartTuning).Main.Overall.Turn.RecallAny10; got < 0.6 {
		t.Errorf("--ingest retain: turn recall_any@10 %.3f", got)
	}
	api, err := eval.NewAPIRecaller(eval.APIRecallerDeps{}, eval.APIRecallerConfig{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	ev, text := perMessageEvidence(t, d)
	res, _, err := api.Recall(ctx, ev.bank, text, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range res[:min(len(res), 10)] {
		found = found || (r.SessionID == ev.SessionID && r.TurnIndex == ev.TurnIndex)
	}
	if !found {
		t.Errorf("recall %q in bank %s: turn %s/%d not in the top ten: %+v", text, ev.bank, ev.SessionID, ev.TurnIndex, res)
	}
}

// renamedBanks is d with prefix before every bank id, so the same events
// can be ingested a second time into the same stack.
func renamedBanks(d *eval.Dataset, prefix string) *eval.Dataset {
	out := &eval.Dataset{Manifest: d.Manifest}
	for _, e := range d.Events {
		e.BankID = prefix + e.BankID
		out.Events = append(out.Events, e)
	}
	for _, q := range d.Questions {
		q.BankID = prefix + q.BankID
		out.Questions = append(out.Questions, q)
	}
	return out
}

// storedFact is what is compared of a fact: where it came from, what it
// says, the context it is embedded with, and its times.
type storedFact struct {
	Doc, Turn, Type, Text, Context string
	MentionedAt, Occurred          string
}

type memoriesPage struct {
	Items []struct {
		Text          string            `json:"text"`
		FactType      string            `json:"fact_type"`
		Type          string            `json:"type"`
		DocumentID    *string           `json:"document_id"`
		Metadata      map[string]string `json:"metadata"`
		Context       string            `json:"context"`
		MentionedAt   time.Time         `json:"mentioned_at"`
		OccurredStart *time.Time        `json:"occurred_start"`
		OccurredEnd   *time.Time        `json:"occurred_end"`
	} `json:"items"`
	Total int `json:"total"`
}

func getPage(ctx context.Context, t *testing.T, u string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d: %s", u, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// listFacts lists a bank's facts (not its observations).
func listFacts(ctx context.Context, t *testing.T, base, bank string) []storedFact {
	t.Helper()
	var out []storedFact
	for offset := 0; ; offset += 1000 {
		var page memoriesPage
		getPage(ctx, t, fmt.Sprintf("%s/v1/default/banks/%s/memories/list?limit=1000&offset=%d", base, url.PathEscape(bank), offset), &page)
		for _, it := range page.Items {
			if it.FactType == "observation" || it.Type == "observation" {
				continue
			}
			doc := ""
			if it.DocumentID != nil {
				doc = *it.DocumentID
			}
			out = append(out, storedFact{Doc: doc, Turn: fmt.Sprint(eval.TurnOf(it.Metadata)), Type: it.FactType, Text: it.Text,
				Context: it.Context, MentionedAt: it.MentionedAt.UTC().Format(time.RFC3339Nano), Occurred: span(it.OccurredStart, it.OccurredEnd)})
		}
		if len(page.Items) < 1000 || offset+1000 >= page.Total {
			break
		}
	}
	return out
}

func span(start, end *time.Time) string {
	s := ""
	for _, t := range []*time.Time{start, end} {
		if t != nil {
			s += t.UTC().Format(time.RFC3339Nano)
		}
		s += "/"
	}
	return s
}

// factsDiff lists the facts only one side has, at most 20 lines.
func factsDiff(a, b []storedFact) string {
	count := map[storedFact]int{}
	for _, f := range a {
		count[f]++
	}
	for _, f := range b {
		count[f]--
	}
	var lines []string
	for f, n := range count {
		switch {
		case n > 0:
			lines = append(lines, fmt.Sprintf("  %s/%s retain only ×%d: %s %q context %q mentioned %s occurred %s", f.Doc, f.Turn, n, f.Type, f.Text, f.Context, f.MentionedAt, f.Occurred))
		case n < 0:
			lines = append(lines, fmt.Sprintf("  %s/%s kafka only  ×%d: %s %q context %q mentioned %s occurred %s", f.Doc, f.Turn, -n, f.Type, f.Text, f.Context, f.MentionedAt, f.Occurred))
		}
	}
	sort.Strings(lines)
	if len(lines) > 20 {
		lines = append(lines[:20], fmt.Sprintf("  … and %d more", len(lines)-20))
	}
	return strings.Join(lines, "\n")
}

// retainAgain sends an event's retain item once more, synchronously, as a
// client retrying after a lost answer would.
func retainAgain(ctx context.Context, t *testing.T, base string, e eval.Event) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"items": []eval.RetainItem{eval.RetainItemOf(e)}, "async": false})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/default/banks/"+url.PathEscape(e.BankID)+"/memories", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("retain %s again: HTTP %d: %s", e.EventID, resp.StatusCode, b)
	}
}

type bankEvidence struct {
	bank string
	eval.Evidence
}

// perMessageEvidence is the first evidence turn of a single-session-user
// question in a bank delivered one event per message, and its text.
func perMessageEvidence(t *testing.T, d *eval.Dataset) (bankEvidence, string) {
	t.Helper()
	perMessage := map[string]bool{}
	for _, e := range d.Events {
		if len(e.Messages) == 1 && e.Metadata[eval.TurnOffsetKey] != "" {
			perMessage[e.BankID] = true
		}
	}
	for _, q := range d.Questions {
		if q.Type != eval.TypeSingleSessionUser || !perMessage[q.BankID] || len(q.Evidence) == 0 {
			continue
		}
		m, ok := d.Turn(q.Evidence[0])
		if !ok {
			t.Fatalf("question %s: evidence %+v is no turn", q.ID, q.Evidence[0])
		}
		return bankEvidence{q.BankID, q.Evidence[0]}, m.Content
	}
	t.Fatal("no single-session-user question in a per-message bank")
	return bankEvidence{}, ""
}
