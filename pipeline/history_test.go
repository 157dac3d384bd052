package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgvector/pgvector-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/memstream/memstream/embed"
	"github.com/memstream/memstream/internal/pgtest"
	"github.com/memstream/memstream/recall"
)

// TestAnswerFoundByTheRequestOverPerMessageEvents: a conversation arrives
// one Kafka record per message, the way most chat logs are published, and
// the assistant's answer says nothing of what was asked ("A Syrah would
// stand up nicely to it."). The pipeline hands the extractor the message
// before it (from memory within a run, from the store after a restart),
// so the answer's fact carries the request as context and in its
// embedding, and a question about the request finds it. Every event
// carries the label "chat conversation", as a Hindsight client's items
// do: it is stored in the context but kept out of the embedding.
func TestAnswerFoundByTheRequestOverPerMessageEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	at := time.Date(2025, 5, 2, 18, 0, 0, 0, time.UTC)
	const label = "chat conversation"
	msg := func(doc string, i int, role, name, text string) []byte {
		b, _ := json.Marshal(map[string]any{
			"bank_id": "ana", "event_id": fmt.Sprintf("%s-%d", doc, i), "document_id": doc, "context": label,
			"messages": []map[string]string{{"role": role, "name": name, "content": text,
				"timestamp": at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)}},
		})
		return b
	}
	produce := func(doc string, vals ...[]byte) {
		t.Helper()
		var recs []*kgo.Record
		for _, v := range vals {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("ana/" + doc), Value: v})
		}
		if err := h.prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The request, then a restart, then the answer: the answer's
	// context must come from the store.
	r := h.start("history")
	produce("dinner", msg("dinner", 0, "user", "Ana", "I'm hosting a dinner party on Saturday and making slow-roasted lamb, what wine should I serve?"))
	h.waitEvents(1, 30*time.Second)
	r.stop(t)
	r = h.start("history")
	defer r.stop(t)
	produce("dinner",
		msg("dinner", 1, "assistant", "Assistant", "A Syrah would stand up nicely to it."),
		msg("dinner", 2, "user", "Ana", "Perfect, thanks."))
	// Other requests and answers, each its own conversation.
	others := [][2]string{
		{"My bike chain keeps slipping, any idea why?", "It is probably stretched; a new chain and a clean cassette usually fix it."},
		{"Can you recommend a podcast for my commute?", "Try a long-form history show, the episodes last about an hour."},
		{"What should I plant on a shady balcony?", "Ferns and hostas do well without much sun."},
		{"How do I get my toddler to sleep earlier?", "Move bedtime by ten minutes a night and keep the room dark."},
		{"Which board game works for six players?", "Codenames is quick to teach and fun with a big group."},
		{"How long should I boil an egg for a soft yolk?", "About six minutes, then straight into cold water."},
		{"What's a good stretch for a stiff neck?", "Slow chin tucks, held for a few seconds, help most people."},
		{"Any tips to keep my laptop from overheating?", "Keep the vents clear and use it on a hard surface."},
		{"What should I read on my flight to Tokyo?", "A short story collection is easy to pick up and put down."},
		{"How do I remove a coffee stain from a shirt?", "Rinse it in cold water and dab on a little dish soap."},
	}
	for i, o := range others {
		doc := fmt.Sprintf("other-%d", i)
		produce(doc, msg(doc, 0, "user", "Ana", o[0]), msg(doc, 1, "assistant", "Assistant", o[1]))
	}
	h.waitEvents(3+2*len(others), 60*time.Second)

	var ctxText, text, replyTo string
	if err := pgtest.DB(h.st).QueryRow(context.Background(),
		`SELECT context, text, reply_to FROM memory_units WHERE bank_id = 'ana' AND text LIKE '%Syrah%'`).Scan(&ctxText, &text, &replyTo); err != nil {
		t.Fatal(err)
	}
	reply, labelled := strings.CutPrefix(ctxText, label+"\n")
	if !labelled || !strings.Contains(reply, "slow-roasted lamb") {
		t.Fatalf("the answer's context %q is not the label, then the request", ctxText)
	}
	// The quote is also stored on its own, for whatever embeds the fact
	// again (a text edit, the rescan, consolidation).
	if replyTo != reply {
		t.Errorf("the answer's reply_to %q, want the quote its context ends with, %q", replyTo, reply)
	}
	emb, _ := embed.NewHash(64)
	vecs, err := emb.EmbedDocuments(context.Background(), []string{reply + "\n" + text, ctxText + "\n" + text})
	if err != nil {
		t.Fatal(err)
	}
	var dReply, dLabel float64
	if err := pgtest.DB(h.st).QueryRow(context.Background(),
		`SELECT embedding <=> $1, embedding <=> $2 FROM memory_units WHERE bank_id = 'ana' AND text LIKE '%Syrah%'`,
		pgvector.NewHalfVector(vecs[0]), pgvector.NewHalfVector(vecs[1])).Scan(&dReply, &dLabel); err != nil {
		t.Fatal(err)
	}
	if dReply > 1e-3 || dLabel <= dReply {
		t.Errorf("the answer's vector is at cosine distance %.4f from the request and the text, %.4f from the label, the request and the text: want the first", dReply, dLabel)
	}
	rc, err := recall.New(recall.Deps{Store: h.st, Embedder: emb, Logger: h.log}, recall.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// All arms, and the semantic arm alone: the embedding of the answer
	// holds the request, so similarity alone finds it.
	for _, arms := range [][]string{nil, {recall.ArmSemantic}} {
		resp, err := rc.Recall(context.Background(), recall.Request{BankID: "ana", Arms: arms,
			Query: "Which bottle did you suggest for the lamb at my dinner party?", QueryTime: at.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		rank := -1
		var got []string
		for i, res := range resp.Results {
			got = append(got, res.Text)
			if rank < 0 && strings.Contains(res.Text, "Syrah") {
				rank = i
			}
		}
		t.Logf("arms %v: the answer is at rank %d of %d", arms, rank, len(resp.Results))
		if rank < 0 || rank > 2 {
			t.Errorf("arms %v: the answer is at rank %d, want in the top 3: %q", arms, rank, got)
		}
	}
}
