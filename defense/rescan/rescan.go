package rescan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/defense"
	"github.com/memstream/memstream/extract"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// Gate is the defense check the rescan applies; *defense.Gate implements
// it.
type Gate interface {
	Check(eventID, text string, p defense.Policy) (defense.Result, []defense.AuditRecord, error)
}

// Embedder embeds redacted fact texts again, as documents; the configured
// embedder implements it.
type Embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
}

// Store reads and writes the stored texts; *store.Store implements it.
type Store interface {
	MaxConns() int
	ScanRescan(ctx context.Context, bank, target string, n int, each func([]store.RescanRow) error) error
	ApplyRescan(ctx context.Context, bank, target string, changes []store.RescanChange, audit []store.RescanAudit,
		aux func(text string, names []string) string) (store.RescanApplied, error)
	UnitNames(ctx context.Context, ids []uuid.UUID) (map[string][]string, error)
}

// Deps are what a rescan works with. Embedder may be nil in a dry run.
type Deps struct {
	Store    Store
	Gate     Gate
	Embedder Embedder
}

// Config says what to rescan.
type Config struct {
	// BankID is the bank to rescan.
	BankID string
	// Policy is the bank's effective policy (its stored policy merged over
	// the configured default).
	Policy defense.Policy
	// DryRun counts what would change without writing anything.
	DryRun bool
	// BatchSize is the number of rows per transaction; default 256.
	BatchSize int
	// Progress, when set, is called after every batch.
	Progress func(Progress)
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = 256
	}
	return c
}

func (c Config) validate() error {
	if c.BankID == "" {
		return errors.New("rescan: bank_id is required")
	}
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("rescan bank %s: %w", c.BankID, err)
	}
	return nil
}

// Progress is reported after each batch.
type Progress struct {
	Target  string
	Scanned int // rows of this target so far
	Changed int // rows of this target redacted (or, in a dry run, to be)
}

// Report summarises a rescan. Counts never include values.
type Report struct {
	BankID string `json:"bank_id"`
	DryRun bool   `json:"dry_run"`
	// Scanned and Changed are per target; Changed counts rows whose stored
	// text was (or would be) rewritten, or for entities and aliases,
	// removed.
	Scanned map[string]int `json:"scanned"`
	Changed map[string]int `json:"changed"`
	// Findings counts findings per label and Actions per action, over
	// every scanned field, including allowed ones.
	Findings map[string]int `json:"findings"`
	Actions  map[string]int `json:"actions"`
	// Invalidated counts valid facts whose text is now blocked.
	Invalidated int `json:"invalidated"`
	// Reembedded counts facts whose embedding was recomputed.
	Reembedded int `json:"reembedded"`
	// ObservationVectors counts observations that carried a copy of a
	// re-embedded fact's vector (an observation of that one fact, with its
	// text) and were given the new one.
	ObservationVectors int `json:"observation_vectors"`
	// AuxRebuilt counts facts whose search_aux was rebuilt because an
	// entity or alias they mention was removed.
	AuxRebuilt int `json:"aux_rebuilt"`
	// AuditRows counts audit rows inserted or updated: there is one per
	// event, label and fingerprint, and an existing row is only updated
	// when its action changed.
	AuditRows int `json:"audit_rows"`
	// Conflicts counts rows that changed between read and write; run the
	// rescan again to cover them.
	Conflicts int `json:"conflicts"`
}

// Run applies cfg.Policy to every stored text of the bank: facts (text,
// context, tags, metadata and reply_to, the quote their vector embeds),
// chunks, observation evidence quotes and history, mental models and
// their history, and document context, tags and metadata; entities and
// aliases the policy finds secrets in are removed. Redacted and blocked
// findings are replaced by their marker in place; a valid fact whose text
// the policy blocks is also invalidated with reason "blocked_by_policy:
// <labels>" rather than deleted, so its links and evidence stay
// explainable. Facts whose text or reply_to changed get a new embedding
// of both, redacted, and search_aux (the tsvector column is generated and
// follows). Audit rows are written for every finding. With DryRun nothing
// is written.
func Run(ctx context.Context, deps Deps, cfg Config) (Report, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	if deps.Store == nil || deps.Gate == nil || (deps.Embedder == nil && !cfg.DryRun) {
		return Report{}, fmt.Errorf("rescan bank %s: store, gate and embedder are required", cfg.BankID)
	}
	// One connection streams the rows while others write the batches.
	if n := deps.Store.MaxConns(); n < 2 {
		return Report{}, fmt.Errorf("rescan bank %s: database.max_conns is %d; the rescan needs at least 2", cfg.BankID, n)
	}
	rep := Report{
		BankID: cfg.BankID, DryRun: cfg.DryRun,
		Scanned: map[string]int{}, Changed: map[string]int{}, Findings: map[string]int{}, Actions: map[string]int{},
	}
	for _, t := range store.RescanTargets() {
		err := deps.Store.ScanRescan(ctx, cfg.BankID, t.Name, cfg.BatchSize, func(batch []store.RescanRow) error {
			if err := runBatch(ctx, deps, cfg, t, batch, &rep); err != nil {
				return err
			}
			if cfg.Progress != nil {
				cfg.Progress(Progress{Target: t.Name, Scanned: rep.Scanned[t.Name], Changed: rep.Changed[t.Name]})
			}
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("rescan bank %s %s: %w", cfg.BankID, t.Name, err)
		}
	}
	return rep, nil
}

// auditKey names the event an audit row belongs to: the source event when
// the row has one, otherwise the rescanned row itself.
func auditKey(t store.RescanTarget, r store.RescanRow) string {
	if r.EventKey != "" {
		return r.EventKey
	}
	return "rescan:" + t.Name + ":" + r.Key
}

// runBatch checks one batch of a target's rows and writes what changed.
func runBatch(ctx context.Context, deps Deps, cfg Config, t store.RescanTarget, batch []store.RescanRow, rep *Report) error {
	changes := make([]store.RescanChange, 0, len(batch))
	var audit auditRows
	for _, r := range batch {
		c := store.RescanChange{Row: r, Out: slices.Clone(r.Fields)}
		ek := auditKey(t, r)
		var rows []store.AuditRow
		check := func(text string) (string, error) {
			if text == "" {
				return text, nil
			}
			res, recs, err := deps.Gate.Check(ek, text, cfg.Policy)
			var be *defense.BlockedError
			if err != nil && !errors.As(err, &be) {
				return "", err
			}
			// Blocked findings are masked in res.Text too: a blocked fact
			// is invalidated *and* redacted, so the value leaves the table.
			if be != nil {
				c.Blocked = mergeLabels(c.Blocked, be.Labels)
			}
			for _, a := range recs {
				rep.Findings[a.Label]++
				rep.Actions[string(a.Action)]++
				rows = append(rows, store.AuditRow{Label: a.Label, Action: string(a.Action), Fingerprint: a.Fingerprint})
			}
			return res.Text, nil
		}
		for i, field := range r.Fields {
			out, changed, err := checkField(t.Fields[i], field, check)
			if err != nil {
				return fmt.Errorf("%s %s: %w", t.Name, r.Key, err)
			}
			if changed {
				c.Out[i] = out
				c.Changed = true
			}
		}
		rep.Scanned[t.Name]++
		for _, a := range rows {
			audit.add(ek, a)
		}
		if c.Changed || (t.Name == store.RescanTargetUnits && len(c.Blocked) > 0 && r.State == "valid") {
			changes = append(changes, c)
		}
	}
	if cfg.DryRun {
		for _, c := range changes {
			if c.Changed {
				rep.Changed[t.Name]++
			}
			if t.Name == store.RescanTargetUnits && len(c.Blocked) > 0 && c.Row.State == "valid" {
				rep.Invalidated++
			}
		}
		return nil
	}
	if len(changes) == 0 && len(audit.rows) == 0 {
		return nil
	}
	if t.Name == store.RescanTargetUnits {
		if err := unitDerived(ctx, deps, changes); err != nil {
			return err
		}
	}
	applied, err := deps.Store.ApplyRescan(ctx, cfg.BankID, t.Name, changes, audit.rows, text.Aux)
	if err != nil {
		return err
	}
	rep.Changed[t.Name] += applied.Changed
	rep.Invalidated += applied.Invalidated
	rep.Reembedded += applied.Reembedded
	rep.ObservationVectors += applied.ObservationVectors
	rep.AuxRebuilt += applied.AuxRebuilt
	rep.Conflicts += applied.Conflicts
	rep.AuditRows += applied.AuditRows
	return nil
}

// auditRows gathers a batch's audit rows, one per event, label and
// fingerprint: an upsert may not touch the same row twice in a statement.
type auditRows struct {
	rows []store.RescanAudit
	seen map[[3]string]int
}

func (a *auditRows) add(event string, r store.AuditRow) {
	k := [3]string{event, r.Label, r.Fingerprint}
	if i, ok := a.seen[k]; ok {
		// The same value twice in one row or batch: the stricter action
		// is what happened to it.
		if actionRank(r.Action) > actionRank(a.rows[i].Action) {
			a.rows[i].Action = r.Action
		}
		return
	}
	if a.seen == nil {
		a.seen = map[[3]string]int{}
	}
	a.seen[k] = len(a.rows)
	a.rows = append(a.rows, store.RescanAudit{EventKey: event, AuditRow: r})
}

func actionRank(a string) int {
	switch defense.Action(a) {
	case defense.ActionBlock:
		return 2
	case defense.ActionRedact:
		return 1
	}
	return 0
}

// Fields of a memory_units row (store.RescanTargets): the ones a fact's
// vector embeds.
const (
	unitText    = 0
	unitReplyTo = 4
)

// unitDerived embeds the changed facts again and rebuilds their
// search_aux. Only facts whose embedded input changed get them, the text
// or the quote of the turn it answers before it (extract.EmbeddingTextOf),
// both as redacted: a secret in the quoted user turn leaves the vector's
// input with the quote. A change confined to context, tags or metadata
// keeps both.
func unitDerived(ctx context.Context, deps Deps, changes []store.RescanChange) error {
	var ids []uuid.UUID
	var at []int
	var texts []string
	for i, c := range changes {
		if c.Out[unitText] == c.Row.Fields[unitText] && c.Out[unitReplyTo] == c.Row.Fields[unitReplyTo] {
			continue
		}
		id, err := uuid.Parse(c.Row.Key)
		if err != nil {
			return fmt.Errorf("fact id %q: %w", c.Row.Key, err)
		}
		ids, at = append(ids, id), append(at, i)
		texts = append(texts, extract.EmbeddingTextOf(c.Out[unitReplyTo], c.Out[unitText]))
	}
	if len(texts) == 0 {
		return nil
	}
	vs, err := deps.Embedder.EmbedDocuments(ctx, texts)
	if err != nil {
		return fmt.Errorf("embed %d redacted facts: %w", len(texts), err)
	}
	if len(vs) != len(texts) {
		return fmt.Errorf("embedder returned %d vectors for %d facts", len(vs), len(texts))
	}
	names, err := deps.Store.UnitNames(ctx, ids)
	if err != nil {
		return err
	}
	for k, i := range at {
		changes[i].Embedding = vs[k]
		changes[i].SearchAux = text.Aux(changes[i].Out[unitText], names[changes[i].Row.Key])
	}
	return nil
}

// checkField applies check to a field: to the whole text, or to every
// string inside a JSON value (tags, metadata). JSON is only re-encoded
// when a string in it changed.
func checkField(kind store.RescanField, text string, check func(string) (string, error)) (string, bool, error) {
	if kind == store.RescanText {
		out, err := check(text)
		return out, err == nil && out != text, err
	}
	if text == "" {
		return text, false, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber() // keep numbers exactly as stored
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false, fmt.Errorf("decode json field: %w", err)
	}
	changed := false
	var walk func(any) (any, error)
	walk = func(x any) (any, error) {
		switch x := x.(type) {
		case string:
			out, err := check(x)
			if out != x {
				changed = true
			}
			return out, err
		case []any:
			for i := range x {
				var err error
				if x[i], err = walk(x[i]); err != nil {
					return nil, err
				}
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				var err error
				if x[k], err = walk(x[k]); err != nil {
					return nil, err
				}
			}
		}
		return x, nil
	}
	v, err := walk(v)
	if err != nil || !changed {
		return text, false, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false, fmt.Errorf("encode json field: %w", err)
	}
	return string(b), true, nil
}

func mergeLabels(have, add []string) []string {
	for _, l := range add {
		if !slices.Contains(have, l) {
			have = append(have, l)
		}
	}
	sort.Strings(have)
	return have
}

// WriteSummary prints the report for people: per target, per label, and
// the facts invalidated and re-embedded.
func (rep Report) WriteSummary(w io.Writer, took time.Duration) {
	verb := "changed"
	if rep.DryRun {
		verb = "would change"
	}
	fmt.Fprintf(w, "bank %s rescanned in %s\n", rep.BankID, took.Round(time.Millisecond))
	targets := make([]string, 0, len(rep.Scanned))
	for t := range rep.Scanned {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		fmt.Fprintf(w, "  %-22s %8d scanned %8d %s\n", t, rep.Scanned[t], rep.Changed[t], verb)
	}
	labels := make([]string, 0, len(rep.Findings))
	for l := range rep.Findings {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	if len(labels) == 0 {
		fmt.Fprintln(w, "  no findings")
	}
	for _, l := range labels {
		fmt.Fprintf(w, "  finding %-30s %6d\n", l, rep.Findings[l])
	}
	fmt.Fprintf(w, "  facts invalidated (blocked): %d, re-embedded: %d (observation vectors with them: %d), search_aux rebuilt: %d, audit rows: %d, conflicts: %d\n",
		rep.Invalidated, rep.Reembedded, rep.ObservationVectors, rep.AuxRebuilt, rep.AuditRows, rep.Conflicts)
	if rep.Conflicts > 0 {
		fmt.Fprintln(w, "  some rows changed while they were being rescanned; run the rescan again to cover them")
	}
}
