package recallapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// audit records a write (any method but GET) on a bank in its audit log.
// It runs before the answer leaves the server (a small answer is flushed
// when the handler returns), so a client reads its own actions back. The
// request is summarised, never stored: it may hold the content.
func (s *Server) audit(r *http.Request, route string, status int, start time.Time) {
	bank := r.PathValue("bank_id")
	if r.Method == http.MethodGet || bank == "" || !bankIDPattern.MatchString(bank) {
		return
	}
	meta := map[string]any{"method": r.Method, "path": r.URL.Path, "status": status}
	if k := callerKey(r); k != nil {
		meta["api_key_name"] = k.name
	}
	e := store.AuditEntry{ID: uuid.New(), BankID: &bank, Action: route, Transport: transportOf(r.Context()), Status: status, StartedAt: start,
		EndedAt: time.Now(), Metadata: rawJSON(meta), Request: rawJSON(map[string]any{"query": r.URL.RawQuery})}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
	defer cancel()
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
