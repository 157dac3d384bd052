package pipeline

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/memstream/memstream/chunk"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/store"
)

// historyWindow is how many earlier messages of a conversation the
// extractor sees with each chunk: enough for the question an answer
// replies to, not so many that old turns leak into new facts' context.
const historyWindow = 3

// historyDocs bounds the conversations whose last messages are kept in
// memory; a conversation that fell out is read back from the store.
const historyDocs = 4096

// HistoryStore reads the last stored pieces of conversations
// (store.Store.RecentLines). A Persister that also implements it gives
// per-message events the context of their earlier messages across
// batches and restarts.
type HistoryStore interface {
	RecentLines(ctx context.Context, banks, docs []string, before []time.Time, n int) (map[string][]store.DocumentLine, error)
}

// history remembers the last messages of recent conversations, so that
// when each message comes as its own event the extractor still sees the
// message it answers. Records with one key keep their order (SPEC §3), so
// the previous message of a conversation has been extracted by the time
// the next one is.
type history struct {
	mu   sync.Mutex
	last *lru.Cache[string, []chunk.Part]
}

func newHistory() *history {
	c, _ := lru.New[string, []chunk.Part](historyDocs)
	return &history{last: c}
}

// inputs builds the extractor inputs of a batch, each chunk with the
// messages before it: the tail of the previous chunk of its event, or for
// an event's first chunk the conversation's last messages (from memory,
// else from the store). Then it remembers each conversation's new tail.
func (p *Pipeline) inputs(ctx context.Context, batch []*item) []extract.Input {
	h := p.hist
	key := func(it *item) string { return it.ev.BankID + "\x00" + it.ev.DocumentID }
	prior := map[string][]chunk.Part{}
	var banks, docs []string
	var before []time.Time
	h.mu.Lock()
	for _, it := range batch {
		if len(it.chunks) == 0 {
			continue
		}
		k := key(it)
		if _, seen := prior[k]; seen {
			continue
		}
		if tail, ok := h.last.Get(k); ok {
			prior[k] = tail
			continue
		}
		prior[k] = nil
		banks, docs = append(banks, it.ev.BankID), append(docs, it.ev.DocumentID)
		before = append(before, it.chunks[0].Timestamp)
	}
	h.mu.Unlock()
	if hs, ok := p.deps.Store.(HistoryStore); ok && len(banks) > 0 {
		lines, err := hs.RecentLines(ctx, banks, docs, before, historyWindow)
		if err != nil {
			// Context is an aid to extraction, not a requirement: go on
			// without it rather than stall ingest.
			p.log.Warn("read conversation history", "error", err)
		}
		for k, ls := range lines {
			for _, l := range ls {
				prior[k] = append(prior[k], chunk.Part{MessageIndex: -1, Name: l.Speaker, Role: "user", Timestamp: l.At, Text: l.Text})
			}
		}
	}
	var out []extract.Input
	for _, it := range batch {
		k := key(it)
		prev := prior[k]
		for ci, c := range it.chunks {
			out = append(out, extract.Input{Parts: c.Parts, History: prev, Context: it.ev.Context, Tags: it.ev.Tags,
				BankID: it.ev.BankID, DocumentID: it.ev.DocumentID, ChunkID: chunkIDOf(it.ev.BankID, it.ev.Key, it.chunkIdx[ci])})
			prev = tailParts(prev, c.Parts)
		}
		prior[k] = prev
	}
	h.mu.Lock()
	for k, tail := range prior {
		if len(tail) > 0 {
			h.last.Add(k, tail)
		}
	}
	h.mu.Unlock()
	return out
}

// tailParts is the last historyWindow parts of prev followed by parts.
func tailParts(prev, parts []chunk.Part) []chunk.Part {
	all := append(append([]chunk.Part(nil), prev...), parts...)
	if len(all) > historyWindow {
		all = all[len(all)-historyWindow:]
	}
	return all
}
