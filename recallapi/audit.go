package recallapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/internal/ttlcache"
	"github.com/memstream/memstream/store"
)

// auditConfigKey is the Hindsight bank configuration key that turns a
// bank's audit log on or off.
const auditConfigKey = "audit_log_enabled"

// Bounds of the audit switch cache: an edit on another replica shows here
// within auditSwitchTTL (the same 5 s the pipeline's policy cache keeps);
// auditSwitchBanks bounds its memory.
const (
	auditSwitchTTL   = 5 * time.Second
	auditSwitchBanks = 4096
)

// auditSwitch caches each bank's effective audit_log_enabled, so that the
// write path does not read the bank's configuration per request: a write
// costs one query per bank per auditSwitchTTL at most. Edits through this
// replica invalidate at once.
type auditSwitch struct {
	def   bool
	cache *ttlcache.Cache[bool]
	load  func(ctx context.Context, bankID string) (map[string]any, error)
}

func newAuditSwitch(def bool, load func(ctx context.Context, bankID string) (map[string]any, error)) (*auditSwitch, error) {
	c, err := ttlcache.New[bool](auditSwitchBanks, auditSwitchTTL)
	if err != nil {
		return nil, err
	}
	return &auditSwitch{def: def, cache: c, load: load}, nil
}

// effective is a bank's audit switch from its overrides: its own boolean
// if it sets one, else the server default.
func (a *auditSwitch) effective(overrides map[string]any) bool {
	if v, ok := overrides[auditConfigKey].(bool); ok {
		return v
	}
	return a.def
}

// on reports whether the bank's writes are audited. A bank that does not
// exist (yet) has the server default. When its configuration cannot be
// read, the server default decides and nothing is cached, as Hindsight
// does: a blip neither loses the rows of a bank meant to be audited nor
// sticks.
func (a *auditSwitch) on(ctx context.Context, bank string) bool {
	if on, ok := a.cache.Get(bank); ok {
		return on
	}
	ov, err := a.load(ctx, bank)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return a.def
	}
	on := a.effective(ov)
	a.cache.Add(bank, on)
	return on
}

// invalidate drops a bank's cached switch after its configuration changed.
func (a *auditSwitch) invalidate(bank string) { a.cache.Remove(bank) }

// auditedBank is the bank a request's audit row would be filed under, or
// "" when the request is not audited at all (reads, routes without a
// bank).
func auditedBank(r *http.Request) string {
	bank := r.PathValue("bank_id")
	if r.Method == http.MethodGet || bank == "" || !bankIDPattern.MatchString(bank) {
		return ""
	}
	return bank
}

// audit records a write (any method but GET) on a bank in its audit log,
// unless the bank's audit_log_enabled is off both when the request came
// (wasOn) and now: a request that switches the log, either way, is on
// record. It runs before the answer leaves the server (a small answer is
// flushed when the handler returns), so a client reads its own actions
// back. The request is summarised, never stored: it may hold the content.
func (s *Server) audit(r *http.Request, route string, status int, start time.Time, wasOn bool) {
	bank := auditedBank(r)
	if bank == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
	defer cancel()
	if !wasOn && !s.audits.on(ctx, bank) {
		return
	}
	meta := map[string]any{"method": r.Method, "path": r.URL.Path, "status": status}
	if k := callerKey(r); k != nil {
		meta["api_key_name"] = k.name
	}
	e := store.AuditEntry{ID: uuid.New(), BankID: &bank, Action: route, Transport: transportOf(r.Context()), Status: status, StartedAt: start,
		EndedAt: time.Now(), Metadata: rawJSON(meta), Request: rawJSON(map[string]any{"query": r.URL.RawQuery})}
	if err := s.d.Store.AddAudit(ctx, e); err != nil {
		s.log.Warn("audit log write failed", "bank_id", bank, "action", route, "error", err)
	}
}

type auditView struct {
	ID         string          `json:"id"`
	Action     string          `json:"action"`
	Transport  string          `json:"transport"`
	BankID     *string         `json:"bank_id"`
	StartedAt  time.Time       `json:"started_at"`
	EndedAt    time.Time       `json:"ended_at"`
	DurationMS int64           `json:"duration_ms"`
	Metadata   json.RawMessage `json:"metadata"`
	Request    json.RawMessage `json:"request,omitempty"`
	Response   json.RawMessage `json:"response,omitempty"`
	Status     int             `json:"status"`
}

func viewAudit(a store.AuditEntry, full bool) auditView {
	v := auditView{ID: a.ID.String(), Action: a.Action, Transport: a.Transport, BankID: a.BankID, StartedAt: a.StartedAt, EndedAt: a.EndedAt,
		DurationMS: a.EndedAt.Sub(a.StartedAt).Milliseconds(), Metadata: a.Metadata, Status: a.Status}
	if full {
		v.Request, v.Response = a.Request, a.Response
		if v.Request == nil {
			v.Request = json.RawMessage(`null`)
		}
		if v.Response == nil {
			v.Response = json.RawMessage(`null`)
		}
	}
	return v
}

func (s *Server) listAuditLogs(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	action, err := textParam(r, "action")
	if err != nil {
		return err
	}
	transport, err := textParam(r, "transport")
	if err != nil {
		return err
	}
	start, err := isoField("start_date", r.URL.Query().Get("start_date"))
	if err != nil {
		return err
	}
	end, err := isoField("end_date", r.URL.Query().Get("end_date"))
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	items, total, err := s.d.Store.ListAudit(r.Context(), bank, action, transport, start, end, limit, offset)
	if err != nil {
		return err
	}
	views := make([]auditView, len(items))
	for i, a := range items {
		views[i] = viewAudit(a, false)
	}
	writeJSON(w, http.StatusOK, map[string]any{"bank_id": bank, "total": total, "limit": limit, "offset": offset, "items": views})
	return nil
}

func (s *Server) getAuditLog(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "log_id")
	if err != nil {
		return err
	}
	a, err := s.d.Store.GetAudit(r.Context(), bank, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewAudit(a, true))
	return nil
}

func (s *Server) auditLogStats(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	action, err := textParam(r, "action")
	if err != nil {
		return err
	}
	name, p, err := periodParam(r)
	if err != nil {
		return err
	}
	since := time.Now().Add(-p.window)
	buckets, err := s.d.Store.AuditStats(r.Context(), bank, action, p.trunc, since)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"bank_id": bank, "period": name, "trunc": p.trunc, "start": since.UTC(), "buckets": buckets})
	return nil
}
