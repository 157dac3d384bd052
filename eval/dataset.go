package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Question types. They follow LongMemEval's names so that results can be
// compared with published numbers; TypeCrossLingualAlias is memstream's own.
const (
	TypeSingleSessionUser       = "single-session-user"
	TypeSingleSessionAssistant  = "single-session-assistant"
	TypeSingleSessionPreference = "single-session-preference"
	TypeMultiSession            = "multi-session"
	TypeKnowledgeUpdate         = "knowledge-update"
	TypeTemporalReasoning       = "temporal-reasoning"
	TypeAbstention              = "abstention"
	TypeCrossLingualAlias       = "cross-lingual-alias"
)

// Types lists every question type in the order reports show them, so that
// tables and charts never depend on map iteration order.
var Types = []string{
	TypeSingleSessionUser,
	TypeSingleSessionAssistant,
	TypeSingleSessionPreference,
	TypeMultiSession,
	TypeKnowledgeUpdate,
	TypeTemporalReasoning,
	TypeAbstention,
	TypeCrossLingualAlias,
}

// File names inside a dataset directory. They are fixed so that the
// ingestion side and the question side agree without configuration.
const (
	EventsFile    = "events.jsonl"
	QuestionsFile = "questions.jsonl"
	ManifestFile  = "manifest.json"
)

// Message is one chat turn in the SPEC §3 event format. Its index inside
// Event.Messages is the turn index that evidence refers to.
type Message struct {
	Role      string    `json:"role"`
	Name      string    `json:"name"`
	Content   string    `json:"content"`
	Timestamp time.Time `json:"timestamp"`
}

// Event is one chat session, or one message of it, as memstream ingests it
// from Kafka (SPEC §3). DocumentID is the session id, so that recall
// results can be traced back to a session through their document_id. An
// event that holds one message of a longer session says which turn it is
// in its TurnOffsetKey metadata. Context is empty in a generated dataset;
// a run's BenchmarkConfig.Context sets it on every event.
type Event struct {
	BankID     string            `json:"bank_id"`
	EventID    string            `json:"event_id"`
	DocumentID string            `json:"document_id"`
	Context    string            `json:"context,omitempty"`
	Messages   []Message         `json:"messages"`
	Tags       []string          `json:"tags,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// Evidence points at one turn that a question's answer depends on.
type Evidence struct {
	SessionID string `json:"session_id"`
	TurnIndex int    `json:"turn_index"`
}

// Question is one benchmark question with its gold labels.
type Question struct {
	ID     string `json:"id"`
	BankID string `json:"bank_id"`
	Type   string `json:"type"`
	// Part is PartTuning, PartHeldOut, PartDialogue or PartDialogueTuning.
	Part           string    `json:"part"`
	Question       string    `json:"question"`
	QueryTimestamp time.Time `json:"query_timestamp"`
	// GoldAnswers are alternative spellings of the answer (for example
	// "杭州" and "Hangzhou"); any one of them counts, unless RequireAll is
	// set.
	GoldAnswers []string   `json:"gold_answers"`
	Evidence    []Evidence `json:"evidence"`
	// OldValue is the superseded value of a knowledge-update question; the
	// scorer checks that recall ranks the new value above it.
	OldValue   string `json:"old_value,omitempty"`
	Abstention bool   `json:"abstention"`
	// RequireAll marks multi-session questions whose gold answers are the
	// parts of one answer, each from a different session: all of them must
	// be in the context for the answer to be there.
	RequireAll bool `json:"require_all,omitempty"`
	// AbsentTerm is the key term of an abstention question. It never occurs
	// in any turn, which is what makes the question unanswerable.
	AbsentTerm string `json:"absent_term,omitempty"`
	// EntityAliases lists every alias of the person a cross-lingual question
	// is about; the question uses a different alias than the evidence turn.
	EntityAliases []string `json:"entity_aliases,omitempty"`
}

// Manifest records how a dataset was made, so that a result can be tied to
// the exact data it was measured on.
type Manifest struct {
	Generator string    `json:"generator"`
	Seed      int64     `json:"seed"`
	Start     time.Time `json:"start"`
	Banks     int       `json:"banks"`
	// PerMessageBanks are delivered as one event per message.
	PerMessageBanks int            `json:"per_message_banks"`
	Sessions        int            `json:"sessions"`
	Events          int            `json:"events"`
	Turns           int            `json:"turns"`
	Questions       int            `json:"questions"`
	ByType          map[string]int `json:"by_type"`
	ByPart          map[string]int `json:"by_part"`
}

// Summary is a few lines on what the dataset holds, for the command line.
func (m Manifest) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d banks (%d delivered one event per message), %d sessions, %d events, %d turns, %d questions (generator %s, seed %d)\n",
		m.Banks, m.PerMessageBanks, m.Sessions, m.Events, m.Turns, m.Questions, m.Generator, m.Seed)
	for _, p := range AllParts {
		if n := m.ByPart[p]; n > 0 {
			fmt.Fprintf(&b, "  part %-22s %d\n", p, n)
		}
	}
	for _, t := range Types {
		if n := m.ByType[t]; n > 0 {
			fmt.Fprintf(&b, "  %-27s %d\n", t, n)
		}
	}
	return b.String()
}

// TurnOffsetKey is the event metadata key that gives the turn index of an
// event's first message within its session; memstream copies event
// metadata onto every fact, so a fact's turn is this plus its
// message_index. Events that hold a whole session do not set it.
const TurnOffsetKey = "turn_offset"

// TurnOf reads the session turn a stored fact came from out of its
// metadata (message_index, plus TurnOffsetKey when the event held one
// message of a longer session), or UnknownTurn.
func TurnOf(meta map[string]string) int {
	v, ok := meta["message_index"]
	if !ok {
		return UnknownTurn
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return UnknownTurn
	}
	if off, ok := meta[TurnOffsetKey]; ok {
		o, err := strconv.Atoi(off)
		if err != nil || o < 0 {
			return UnknownTurn
		}
		n += o
	}
	return n
}

// Dataset is a generated benchmark: the events to ingest and the questions
// to ask once they are ingested.
type Dataset struct {
	Manifest  Manifest
	Events    []Event
	Questions []Question
}

// Write stores the dataset as DIR/events.jsonl, DIR/questions.jsonl and
// DIR/manifest.json, creating DIR if needed. The output is byte-identical
// for identical datasets, so a seed can be checked by diffing files.
func (d *Dataset) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create dataset dir %s: %w", dir, err)
	}
	if err := writeJSONL(filepath.Join(dir, EventsFile), d.Events); err != nil {
		return err
	}
	if err := writeJSONL(filepath.Join(dir, QuestionsFile), d.Questions); err != nil {
		return err
	}
	b, err := json.MarshalIndent(d.Manifest, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	path := filepath.Join(dir, ManifestFile)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Load reads a dataset written by Write.
func Load(dir string) (*Dataset, error) {
	d := &Dataset{}
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &d.Manifest); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	if d.Events, err = readJSONL[Event](filepath.Join(dir, EventsFile)); err != nil {
		return nil, err
	}
	if d.Questions, err = readJSONL[Question](filepath.Join(dir, QuestionsFile)); err != nil {
		return nil, err
	}
	return d, nil
}

// Turn returns the message an evidence reference points at, so that tests
// and fake recallers can resolve provenance without re-indexing the events.
func (d *Dataset) Turn(ev Evidence) (Message, bool) {
	for i := range d.Events {
		e := &d.Events[i]
		if e.DocumentID != ev.SessionID {
			continue
		}
		off := e.TurnOffset()
		if ev.TurnIndex >= off && ev.TurnIndex < off+len(e.Messages) {
			return e.Messages[ev.TurnIndex-off], true
		}
	}
	return Message{}, false
}

// TurnOffset is the session turn index of the event's first message.
func (e *Event) TurnOffset() int {
	n, err := strconv.Atoi(e.Metadata[TurnOffsetKey])
	if err != nil {
		return 0
	}
	return n
}

// Sessions returns every session's turns in order, keyed by session id,
// whether the session came as one event or one event per message.
func (d *Dataset) Sessions() map[string][]Message {
	out := map[string][]Message{}
	for i := range d.Events {
		e := &d.Events[i]
		off := e.TurnOffset()
		turns := out[e.DocumentID]
		for len(turns) < off+len(e.Messages) {
			turns = append(turns, Message{})
		}
		copy(turns[off:], e.Messages)
		out[e.DocumentID] = turns
	}
	return out
}

// Part returns the questions of one part, in dataset order.
func (d *Dataset) Part(part string) []Question {
	var out []Question
	for _, q := range d.Questions {
		if q.Part == part {
			out = append(out, q)
		}
	}
	return out
}

func writeJSONL[T any](path string, items []T) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Chinese turns stay readable in the file and HTML escaping would only
	// add noise to the events memstream ingests.
	enc.SetEscapeHTML(false)
	for i := range items {
		if err := enc.Encode(items[i]); err != nil {
			return fmt.Errorf("encode line %d of %s: %w", i+1, path, err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("decode line %d of %s: %w", line, path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if out == nil {
		return nil, errors.New("empty dataset file " + path)
	}
	return out, nil
}
