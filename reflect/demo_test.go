package reflect

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/resolve"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
	"github.com/memstream/memstream/tokens"
)

// demoEvent is the part of a demo.jsonl line this test needs.
type demoEvent struct {
	BankID     string   `json:"bank_id"`
	EventID    string   `json:"event_id"`
	DocumentID string   `json:"document_id"`
	Context    string   `json:"context"`
	Tags       []string `json:"tags"`
	Messages   []struct {
		Role      string    `json:"role"`
		Name      string    `json:"name"`
		Content   string    `json:"content"`
		Timestamp time.Time `json:"timestamp"`
	} `json:"messages"`
}

// TestOfflineOnDemoData extracts the demo's Alice conversations with the
// offline extractor, persists them as the pipeline would (one chunk per
// event), and asks where Alice lives now, before consolidation has made
// any observation: the newest fact must win over "I live in Beijing".
func TestOfflineOnDemoData(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../examples/chatlogs/demo.jsonl")
	if err != nil {
		t.Skipf("no demo data: %v", err)
	}
	defer f.Close()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, emb, _ := migratedStore(t, log)
	ex, err := extract.NewOffline(extract.OfflineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var evs []store.EventRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev demoEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.BankID != "alice" {
			continue
		}
		in := extract.Input{Context: ev.Context, Tags: ev.Tags}
		var lines []string
		for i, m := range ev.Messages {
			in.Parts = append(in.Parts, chunk.Part{MessageIndex: i, Role: m.Role, Name: m.Name, Timestamp: m.Timestamp, Text: m.Content})
			lines = append(lines, m.Name+": "+m.Content)
		}
		facts, err := ex.Extract(ctx, []extract.Input{in})
		if err != nil {
			t.Fatal(err)
		}
		chunkID := store.DeriveID("alice", ev.EventID, "chunk", "0")
		rec := store.EventRecord{BankID: "alice", EventKey: ev.EventID, DocumentID: ev.DocumentID, Context: ev.Context, Tags: ev.Tags,
			Chunks: []store.ChunkRow{{ID: chunkID, Text: strings.Join(lines, "\n"), StartedAt: ev.Messages[0].Timestamp}}}
		ents := map[string]uuid.UUID{}
		for i, fc := range facts[0] {
			vs, err := emb.EmbedDocuments(ctx, []string{fc.Text})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			var eids []uuid.UUID
			for _, e := range fc.Entities {
				id := store.DeriveID("alice", "entity", strings.ToLower(e.Name))
				if _, ok := ents[e.Name]; !ok {
					ents[e.Name] = id
					er := store.EntityRow{ID: id, Name: e.Name, Kind: e.Kind, Seen: fc.MentionedAt, Mentions: 1}
					for _, k := range resolve.Keys(e.Name) {
						er.Aliases = append(er.Aliases, store.AliasRow{Key: k, Alias: e.Name})
					}
					rec.Entities = append(rec.Entities, er)
				}
				names = append(names, e.Name)
				eids = append(eids, id)
			}
			key := fmt.Sprintf("%s#%d", ev.EventID, i)
			rec.Facts = append(rec.Facts, store.FactRow{ID: store.DeriveID("alice", key), FactType: fc.FactType, Text: fc.Text,
				Context: fc.Context, Embedding: vs[0], SearchAux: text.Aux(fc.Text, names), OccurredStart: fc.OccurredStart,
				OccurredEnd: fc.OccurredEnd, MentionedAt: fc.MentionedAt, Tags: fc.Tags, ChunkID: chunkID, MessageIndex: fc.MessageIndex,
				IdemKey: key, EntityIDs: eids})
		}
		evs = append(evs, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		t.Fatal("no alice events in the demo data")
	}
	if _, err := st.PersistBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	rc, err := recall.New(recall.Deps{Store: st, Embedder: emb, Logger: log}, recall.Config{Tokenizer: tokens.Estimate})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Deps{Recaller: rc, Store: st}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	resp, err := r.Reflect(ctx, Request{BankID: "alice", Query: "Where does Alice live now?", QueryTimestamp: &now})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("answer:\n%s", resp.Text)
	lead := strings.SplitN(resp.Text, "\n", 2)[0]
	if !strings.Contains(lead, "Shanghai") || strings.Contains(lead, "Beijing") {
		t.Errorf("lead %q does not answer Shanghai", lead)
	}
	if len(resp.BasedOn.Memories) == 0 || !strings.Contains(lead, resp.BasedOn.Memories[0]) {
		t.Errorf("the lead does not cite the first memory of based_on %v", resp.BasedOn.Memories)
	}
}
