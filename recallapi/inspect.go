package recallapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/memstream/memstream/broker"
	"github.com/memstream/memstream/consolidate"
	"github.com/memstream/memstream/store"
)

// The routes in this file are memstream's own (no Hindsight counterpart):
// what the web console needs to explain a bank, and useful to any
// operator with curl. They are read-only except the dead-letter replay.

// inspectStore is what the inspection routes read.
type inspectStore interface {
	BankActivity(ctx context.Context, bankID string, since, until time.Time, buckets int) (store.Activity, error)
	MemoryProvenance(ctx context.Context, bankID string, id uuid.UUID) (store.Provenance, error)
	LookupMemories(ctx context.Context, bankID string, ids []uuid.UUID) ([]store.MemoryBrief, error)
	EntityNeighbourhood(ctx context.Context, bankID string, id uuid.UUID, limit int) (store.EntityGraph, error)
	ListDeadLetters(ctx context.Context, bankID, class string, limit, offset int) ([]store.DeadLetter, int, []store.DeadLetterClass, error)
	GetDeadLetter(ctx context.Context, bankID string, p store.DeadLetterPos) (store.DeadLetter, error)
	ClaimDeadLetters(ctx context.Context, bankID, class string, pos []store.DeadLetterPos) ([]store.DeadLetter, error)
	UnclaimDeadLetter(ctx context.Context, bankID string, p store.DeadLetterPos) error
}

// DeadLetterArchive reads records back from the dead-letter topic and
// replays them (*broker.DeadLetterArchive).
type DeadLetterArchive interface {
	Find(ctx context.Context, topic string, partition int32, offset int64, near time.Time) (*broker.DeadLetterRecord, error)
	Replay(ctx context.Context, recs []*broker.DeadLetterRecord) error
}

func (s *Server) inspectRoutes() []route {
	const b = "/v1/default/banks/{bank_id}"
	return []route{
		{"GET", b + "/activity", "activity", "read", "Ingest and consolidation over time (query: minutes 1–43200, default 60; buckets 1–500, default 60): events, facts, consolidated, dead letters and backlog per bucket.", s.activity, ""},
		{"GET", b + "/memories/{memory_id}/provenance", "memory_provenance", "read", "One memory with its source event, document, chunk, entities, links and the observations it supports.", s.memoryProvenance, ""},
		{"POST", b + "/memories/lookup", "memories_lookup", "read", "Short references (id, type, text, state) to up to 1000 memories by id.", s.lookupMemories, "MemoryLookupRequest"},
		{"GET", b + "/entities/{entity_id}/graph", "entity_graph", "read", "An entity's neighbourhood: entities mentioned with it (query: limit 1–100, default 20) and the links among them.", s.entityGraph, ""},
		{"GET", b + "/mental-models/{mental_model_id}/page", "mental_model_page", "read", "A mental model as the markdown page `memstream export pages` writes (text/markdown).", s.mentalModelPage, ""},
		{"GET", b + "/dead-letters", "dead_letters_list", "read", "The bank's dead letters, newest first (query: class, limit, offset), with counts per error class.", s.listDeadLetters, ""},
		{"GET", b + "/dead-letters/{topic}/{partition}/{offset}", "dead_letter_get", "read", "One dead letter by source position, with the record's headers and value read back from the dead-letter topic, secrets redacted.", s.getDeadLetter, ""},
		{"POST", b + "/dead-letters/replay", "dead_letters_replay", "admin", "Replay dead letters to their source topic: {records:[{topic,partition,offset}]} or {class}; each at most once.", s.replayDeadLetters, "DeadLetterReplayRequest"},
	}
}

func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest(name, name+" must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
	}
	return n, nil
}

func (s *Server) activity(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	minutes, err := intParam(r, "minutes", 60, 1, 43200)
	if err != nil {
		return err
	}
	buckets, err := intParam(r, "buckets", 60, 1, 500)
	if err != nil {
		return err
	}
	until := time.Now().UTC()
	a, err := s.d.Store.BankActivity(r.Context(), bank, until.Add(-time.Duration(minutes)*time.Minute), until, buckets)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

func (s *Server) memoryProvenance(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "memory_id")
	if err != nil {
		return err
	}
	p, err := s.d.Store.MemoryProvenance(r.Context(), bank, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

const maxLookup = 1000

func (s *Server) lookupMemories(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body struct {
		IDs []string `json:"ids"`
	}
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if len(body.IDs) > maxLookup {
		return badRequest("ids", "ids holds at most 1000 ids")
	}
	ids := make([]uuid.UUID, len(body.IDs))
	for i, raw := range body.IDs {
		if ids[i], err = uuid.Parse(raw); err != nil {
			return badRequest("ids["+strconv.Itoa(i)+"]", "ids["+strconv.Itoa(i)+"] must be a UUID")
		}
	}
	items, err := s.d.Store.LookupMemories(r.Context(), bank, ids)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
	return nil
}

func (s *Server) entityGraph(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "entity_id")
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	g, err := s.d.Store.EntityNeighbourhood(r.Context(), bank, id, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, g)
	return nil
}

func (s *Server) mentalModelPage(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "mental_model_id")
	if err != nil {
		return err
	}
	m, err := s.d.Store.GetMentalModel(r.Context(), bank, id)
	if err != nil {
		return err
	}
	page := consolidate.RenderPage(store.RefreshTarget{ID: m.ID, BankID: m.BankID, Name: m.Name, SourceQuery: m.SourceQuery,
		Content: m.Content, Tags: m.Tags, MaxTokens: m.MaxTokens, BasedOn: m.BasedOn, LastRefreshedAt: m.LastRefreshedAt})
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(page))
	return nil
}

func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	class, err := textParam(r, "class")
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	items, total, classes, err := s.d.Store.ListDeadLetters(r.Context(), bank, class, limit, offset)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "total": total, "limit": limit, "offset": offset, "classes": classes})
	return nil
}

func deadLetterPos(r *http.Request) (store.DeadLetterPos, error) {
	p := store.DeadLetterPos{Topic: r.PathValue("topic")}
	if p.Topic == "" || len(p.Topic) > 249 {
		return p, badRequest("topic", "topic must be a Kafka topic name")
	}
	part, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil || part < 0 {
		return p, badRequest("partition", "partition must be a non-negative integer")
	}
	p.Partition = int32(part)
	if p.Offset, err = strconv.ParseInt(r.PathValue("offset"), 10, 64); err != nil || p.Offset < 0 {
		return p, badRequest("offset", "offset must be a non-negative integer")
	}
	return p, nil
}

type headerView struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type recordView struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp time.Time    `json:"timestamp"`
	Key       string       `json:"key"`
	Value     string       `json:"value"`
	Headers   []headerView `json:"headers"`
}

// redact masks secrets and personal data in text shown from a dead letter:
// the record failed before (or at) the defense stage, so its value is raw.
func (s *Server) redact(b []byte) string {
	t := string(b)
	if !utf8.ValidString(t) {
		t = strings.ToValidUTF8(t, "\uFFFD")
	}
	if s.d.Redact == nil {
		return "[value hidden: no redactor configured]"
	}
	return s.d.Redact(t)
}

func (s *Server) getDeadLetter(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	pos, err := deadLetterPos(r)
	if err != nil {
		return err
	}
	d, err := s.d.Store.GetDeadLetter(r.Context(), bank, pos)
	if err != nil {
		return err
	}
	out := map[string]any{"dead_letter": d, "record": nil}
	if s.d.DeadLetters == nil {
		out["note"] = "this replica has no Kafka client to read the dead-letter topic"
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	rec, err := s.d.DeadLetters.Find(r.Context(), pos.Topic, pos.Partition, pos.Offset, d.CreatedAt)
	if err != nil {
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: err.Error()}
	}
	if rec == nil {
		out["note"] = "the record is no longer in the dead-letter topic (retention) or lies too far from its time"
	} else {
		v := recordView{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp,
			Key: s.redact(rec.Key), Value: s.redact(rec.Value), Headers: []headerView{}}
		for _, h := range rec.Headers {
			v.Headers = append(v.Headers, headerView{Key: h.Key, Value: s.redact(h.Value)})
		}
		out["record"] = v
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type replayBody struct {
	Records []store.DeadLetterPos `json:"records"`
	Class   string                `json:"class"`
}

// replayDeadLetters re-produces dead letters to their source topics. Each
// record is claimed in the database first, so a double click, a retried
// request or two operators replay it once; a record that fails again
// comes back as a new dead letter with its own position.
func (s *Server) replayDeadLetters(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body replayBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if (len(body.Records) == 0) == (body.Class == "") {
		return badRequest("records", "give exactly one of records (a list of {topic, partition, offset}) and class")
	}
	if len(body.Records) > maxLookup {
		return badRequest("records", "records holds at most 1000 positions")
	}
	if s.d.DeadLetters == nil {
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "this replica has no Kafka client to replay dead letters"}
	}
	claimed, err := s.d.Store.ClaimDeadLetters(r.Context(), bank, body.Class, body.Records)
	if err != nil {
		return err
	}
	var recs []*broker.DeadLetterRecord
	var positions []store.DeadLetterPos
	missing := 0
	// Whatever is not produced is unclaimed, with a context that outlives
	// a cancelled request.
	unclaim := func(ps []store.DeadLetterPos) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		for _, p := range ps {
			if err := s.d.Store.UnclaimDeadLetter(ctx, bank, p); err != nil {
				s.log.Warn("unclaim dead letter", "bank_id", bank, "topic", p.Topic, "partition", p.Partition, "offset", p.Offset, "error", err)
			}
		}
	}
	for i, d := range claimed {
		p := store.DeadLetterPos{Topic: d.Topic, Partition: d.Partition, Offset: d.Offset}
		rec, err := s.d.DeadLetters.Find(r.Context(), d.Topic, d.Partition, d.Offset, d.CreatedAt)
		if err != nil {
			unclaim(append(positions, positionsOf(claimed[i:])...))
			return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: err.Error()}
		}
		if rec == nil {
			missing++
			unclaim([]store.DeadLetterPos{p})
			continue
		}
		recs = append(recs, rec)
		positions = append(positions, p)
	}
	if len(recs) > 0 {
		if err := s.d.DeadLetters.Replay(r.Context(), recs); err != nil {
			unclaim(positions)
			return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: err.Error()}
		}
	}
	requested := len(body.Records)
	if body.Class != "" {
		requested = len(claimed)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "bank_id": bank, "replayed": len(recs),
		"missing": missing, "skipped": max(requested-len(claimed), 0), "records": positions})
	return nil
}

func positionsOf(ds []store.DeadLetter) []store.DeadLetterPos {
	out := make([]store.DeadLetterPos, len(ds))
	for i, d := range ds {
		out[i] = store.DeadLetterPos{Topic: d.Topic, Partition: d.Partition, Offset: d.Offset}
	}
	return out
}
