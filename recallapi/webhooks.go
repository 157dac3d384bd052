package recallapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/store"
)

// The event types memstream announces (Hindsight's WebhookEventType).
var webhookEvents = []string{"retain.completed", "consolidation.completed", "memory_defense.triggered"}

// webhookRetries are the waits between attempts, as Hindsight's: fast
// early retries for a blip, later ones for an outage.
var webhookRetries = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour}

type webhookHTTPConfig struct {
	Method         string            `json:"method"`
	TimeoutSeconds int               `json:"timeout_seconds"`
	Headers        map[string]string `json:"headers"`
	Params         map[string]string `json:"params"`
}

func (c *webhookHTTPConfig) fill() {
	if c.Method == "" {
		c.Method = "POST"
	}
	if c.TimeoutSeconds <= 0 {
		c.TimeoutSeconds = 30
	}
	if c.Headers == nil {
		c.Headers = map[string]string{}
	}
	if c.Params == nil {
		c.Params = map[string]string{}
	}
}

type webhookBody struct {
	URL        *string            `json:"url"`
	Secret     *string            `json:"secret"`
	EventTypes *[]string          `json:"event_types"`
	Enabled    *bool              `json:"enabled"`
	HTTPConfig *webhookHTTPConfig `json:"http_config"`
}

func (b *webhookBody) check(create bool) error {
	if b.URL != nil || create {
		if b.URL == nil {
			return badRequest("url", "url is required")
		}
		u, err := url.Parse(*b.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(*b.URL) > 2000 {
			return badRequest("url", "url must be an absolute http or https URL of at most 2000 bytes")
		}
	}
	if b.EventTypes != nil {
		if len(*b.EventTypes) == 0 {
			return badRequest("event_types", "event_types must name at least one event")
		}
		for i, t := range *b.EventTypes {
			if !slices.Contains(webhookEvents, t) {
				return badRequest(fmt.Sprintf("event_types[%d]", i), fmt.Sprintf("event_types[%d]: unknown event %q (%s)", i, t, strings.Join(webhookEvents, ", ")))
			}
		}
	}
	if c := b.HTTPConfig; c != nil {
		if m := strings.ToUpper(c.Method); m != "" && m != "POST" && m != "GET" {
			return badRequest("http_config.method", "http_config.method must be GET or POST")
		}
		if c.TimeoutSeconds < 0 || c.TimeoutSeconds > 300 {
			return badRequest("http_config.timeout_seconds", "http_config.timeout_seconds must be from 1 to 300")
		}
	}
	return nil
}

// webhookView is Hindsight's WebhookResponse; the secret is never shown
// back, only whether there is one.
type webhookView struct {
	ID         string            `json:"id"`
	BankID     string            `json:"bank_id"`
	URL        string            `json:"url"`
	Secret     *string           `json:"secret"`
	EventTypes []string          `json:"event_types"`
	Enabled    bool              `json:"enabled"`
	HTTPConfig webhookHTTPConfig `json:"http_config"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
}

func viewWebhook(w store.Webhook) webhookView {
	v := webhookView{ID: w.ID.String(), BankID: w.BankID, URL: w.URL, EventTypes: w.EventTypes, Enabled: w.Enabled,
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
	_ = json.Unmarshal(w.HTTPConfig, &v.HTTPConfig)
	v.HTTPConfig.fill()
	if w.Secret != nil && *w.Secret != "" {
		masked := "********"
		v.Secret = &masked
	}
	return v
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	var body webhookBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body.EventTypes == nil {
		body.EventTypes = &[]string{"consolidation.completed"} // Hindsight's default
	}
	if err := body.check(true); err != nil {
		return err
	}
	if err := s.checkWebhookURL(r.Context(), *body.URL); err != nil {
		return err
	}
	cfg := webhookHTTPConfig{}
	if body.HTTPConfig != nil {
		cfg = *body.HTTPConfig
	}
	cfg.fill()
	cfg.Method = strings.ToUpper(cfg.Method)
	raw, _ := json.Marshal(cfg)
	hook := store.Webhook{ID: uuid.New(), BankID: bank, URL: *body.URL, Secret: body.Secret, EventTypes: *body.EventTypes,
		Enabled: body.Enabled == nil || *body.Enabled, HTTPConfig: raw}
	out, err := s.d.Store.CreateWebhook(r.Context(), hook)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, viewWebhook(out))
	return nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	bank, err := s.bankID(r)
	if err != nil {
		return err
	}
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	hooks, total, err := s.d.Store.ListWebhooks(r.Context(), bank, limit, offset)
	if err != nil {
		return err
	}
	views := make([]webhookView, len(hooks))
	for i, h := range hooks {
		views[i] = viewWebhook(h)
	}
	writeJSON(w, http.StatusOK, list[webhookView]{Items: views, Total: total, Limit: limit, Offset: offset})
	return nil
}

func (s *Server) patchWebhook(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "webhook_id")
	if err != nil {
		return err
	}
	var body webhookBody
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &body); err != nil {
		return err
	}
	if body == (webhookBody{}) {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: "bad_request", Message: "No fields provided to update"}
	}
	if err := body.check(false); err != nil {
		return err
	}
	if body.URL != nil {
		if err := s.checkWebhookURL(r.Context(), *body.URL); err != nil {
			return err
		}
	}
	p := store.WebhookPatch{URL: body.URL, Secret: body.Secret, EventTypes: body.EventTypes, Enabled: body.Enabled}
	if body.HTTPConfig != nil {
		body.HTTPConfig.fill()
		body.HTTPConfig.Method = strings.ToUpper(body.HTTPConfig.Method)
		p.HTTPConfig, _ = json.Marshal(body.HTTPConfig)
	}
	out, err := s.d.Store.UpdateWebhook(r.Context(), bank, id, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewWebhook(out))
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "webhook_id")
	if err != nil {
		return err
	}
	if err := s.d.Store.DeleteWebhook(r.Context(), bank, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "webhook deleted", "deleted_count": 1})
	return nil
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	bank, id, err := s.bankAndUUID(r, "webhook_id")
	if err != nil {
		return err
	}
	if _, err := s.d.Store.GetWebhook(r.Context(), bank, id); err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 50, 1, 200)
	if err != nil {
		return err
	}
	var before *time.Time
	if c := r.URL.Query().Get("cursor"); c != "" {
		t, err := time.Parse(time.RFC3339Nano, c)
		if err != nil {
			return badRequest("cursor", "cursor must be a next_cursor this route returned")
		}
		before = &t
	}
	items, err := s.d.Store.ListDeliveries(r.Context(), bank, id, before, limit+1)
	if err != nil {
		return err
	}
	var next *string
	if len(items) > limit {
		items = items[:limit]
		c := items[limit-1].CreatedAt.Format(time.RFC3339Nano)
		next = &c
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": next})
	return nil
}

// kickWebhooks wakes the webhook sender early.
func (s *Server) kickWebhooks() {
	select {
	case s.hookWake <- struct{}{}:
	default:
	}
}

// sendWebhooks delivers queued webhook events until ctx ends, signing each
// body as Hindsight does (X-Hindsight-Signature: sha256=HMAC(secret,
// body), also as X-Hub-Signature-256, and X-Hindsight-Signature-V2 over
// "timestamp.body"), and retrying failures from the queue table. Every
// replica runs it: deliveries are claimed with SKIP LOCKED under a lease
// longer than the webhook's timeout, so one is sent by one sender at a
// time, at least once, with the same X-Hindsight-Delivery-Id on every
// attempt. Idle, it sleeps until the next retry is due, a NOTIFY
// announces a new delivery, or the idle poll passes.
func (s *Server) sendWebhooks(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	client := s.webhookClient()
	defer client.CloseIdleConnections()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.hookWake:
		}
		s.passes.WithLabelValues("webhooks").Inc()
		wait := s.deliveryPass(ctx, client)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// deliveryPass sends what is due and returns how long to sleep.
func (s *Server) deliveryPass(ctx context.Context, client *http.Client) time.Duration {
	const page, parallel, busy = 20, 4, 250 * time.Millisecond
	batch, err := s.d.Store.ClaimDeliveries(ctx, page)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("webhooks: claim", slog.Any("error", err))
		}
		return busy
	}
	// A few at a time, so one slow endpoint does not hold up the rest.
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, d := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s.deliver(ctx, client, d)
		}()
	}
	wg.Wait()
	if len(batch) == page {
		return 0
	}
	at, ok, err := s.d.Store.NextDeliveryDue(ctx)
	if err != nil {
		return busy
	}
	wait := s.idlePoll
	if ok {
		wait = min(wait, max(time.Until(at), busy/5))
	}
	return wait
}

func (s *Server) deliver(ctx context.Context, client *http.Client, d store.WebhookDelivery) {
	var cfg webhookHTTPConfig
	_ = json.Unmarshal(d.HTTPConfig, &cfg)
	cfg.fill()
	body := []byte(d.Payload)
	target, err := url.Parse(d.URL)
	if err != nil {
		s.deliveryFailed(ctx, d, nil, "", "bad url: "+err.Error())
		return
	}
	q := target.Query()
	for k, v := range cfg.Params {
		q.Set(k, v)
	}
	target.RawQuery = q.Encode()
	rctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.TimeoutSeconds)*time.Second)
	defer cancel()
	var rd io.Reader
	if cfg.Method != "GET" {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, cfg.Method, target.String(), rd)
	if err != nil {
		s.deliveryFailed(ctx, d, nil, "", err.Error())
		return
	}
	for k, v := range cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "memstream-webhooks")
	req.Header.Set("X-Hindsight-Event", d.EventType)
	req.Header.Set("X-Hindsight-Event-Id", d.EventID.String())
	req.Header.Set("X-Hindsight-Delivery-Id", d.ID.String())
	if d.Secret != nil && *d.Secret != "" {
		sig := SignWebhook(*d.Secret, body)
		req.Header.Set("X-Hindsight-Signature", sig)
		req.Header.Set("X-Hub-Signature-256", sig)
		req.Header.Set("X-Hindsight-Signature-V2", SignWebhookV2(*d.Secret, body, time.Now().Unix()))
	}
	resp, err := client.Do(req)
	if err != nil {
		s.deliveryFailed(ctx, d, nil, "", err.Error())
		return
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode/100 == 2 {
		if ok, err := s.d.Store.DeliverySucceeded(context.WithoutCancel(ctx), d, resp.StatusCode, string(rb)); err != nil {
			s.log.Warn("webhooks: record delivery", slog.Any("error", err))
		} else if !ok {
			s.log.Info("webhooks: delivered after the claim ran out; another sender may send it again",
				slog.String("delivery_id", d.ID.String()))
		}
		return
	}
	code := resp.StatusCode
	s.deliveryFailed(ctx, d, &code, string(rb), "HTTP "+strconv.Itoa(code))
}

func (s *Server) deliveryFailed(ctx context.Context, d store.WebhookDelivery, status *int, body, msg string) {
	wait := webhookRetries[min(d.Attempts, len(webhookRetries)-1)]
	if _, err := s.d.Store.DeliveryFailed(context.WithoutCancel(ctx), d, status, body, msg, len(webhookRetries)+1, wait); err != nil {
		s.log.Warn("webhooks: record failure", slog.Any("error", err))
	}
	s.log.Info("webhook delivery failed; will retry", slog.String("bank_id", d.BankID), slog.String("webhook_id", d.WebhookID.String()),
		slog.String("event", d.EventType), slog.Int("attempt", d.Attempts+1), slog.String("error", msg))
}

// SignWebhook is the body-only signature Hindsight sends:
// "sha256=" + hex(HMAC-SHA256(secret, body)).
func SignWebhook(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// SignWebhookV2 is the timestamped signature: "t=<unix>,v1=" +
// hex(HMAC-SHA256(secret, "<unix>." + body)), so a receiver can refuse
// replays outside a tolerance window.
func SignWebhookV2(secret string, body []byte, unix int64) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(unix, 10) + "."))
	m.Write(body)
	return fmt.Sprintf("t=%d,v1=%s", unix, hex.EncodeToString(m.Sum(nil)))
}
