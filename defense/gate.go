package defense

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Fingerprint returns a salted, truncated HMAC-SHA256 of secret. Audit
// records carry it so operators can tell "the same key was pasted in three
// chats" without the audit table becoming a second copy of the secrets.
// The salt must be private: without it, low-entropy values such as
// passwords could be brute-forced from the fingerprint.
func Fingerprint(salt []byte, secret string) string {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(secret))
	return hex.EncodeToString(m.Sum(nil))[:16]
}

// AuditRecord describes one finding without its value.
type AuditRecord struct {
	Label       string `json:"label"`
	Action      Action `json:"action"`
	EventID     string `json:"event_id"`
	Fingerprint string `json:"fingerprint"`
}

// GateConfig configures a Gate.
type GateConfig struct {
	// FingerprintSalt keys the audit fingerprints; at least 16 bytes, and
	// stable across restarts so fingerprints stay comparable.
	FingerprintSalt []byte
	// Scanner selects the opt-in detectors for every call; a policy can
	// still enable them per bank.
	Scanner ScannerConfig
}

// minSaltLen keeps fingerprints keyed by enough secret material that a
// dictionary attack on them is not practical.
const minSaltLen = 16

// WithDefaults returns the config with defaults filled in. There is no
// default salt on purpose: a random one would make fingerprints unstable
// across restarts, and a fixed one would be public.
func (c GateConfig) WithDefaults() GateConfig { return c }

func (c GateConfig) validate() error {
	if len(c.FingerprintSalt) < minSaltLen {
		return fmt.Errorf("defense.fingerprint_salt: need at least %d bytes, got %d", minSaltLen, len(c.FingerprintSalt))
	}
	return nil
}

// metrics are built per Gate from an injected registerer; there is no
// package-level state.
type metrics struct {
	findings *prometheus.CounterVec
	scanTime prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memstream_defense_findings_total",
			Help: "Secrets and personal data found by the defense gate, by pattern label and policy action.",
		}, []string{"label", "action"}),
		scanTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "memstream_defense_scan_seconds",
			Help:    "Time to scan and apply the defense policy to one text.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10), // 1µs .. ~0.26s
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.findings, m.scanTime} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register defense metrics: %w", err)
		}
	}
	return m, nil
}

// Gate is the defense stage as the pipeline and the HTTP retain handler
// use it: scan, apply the bank policy, count, and produce audit records.
// It is safe for concurrent use.
type Gate struct {
	scanner *Scanner
	metrics *metrics
	salt    []byte
	log     *slog.Logger
}

// GateDeps are a Gate's collaborators. Registerer may be nil (metrics are
// then kept but not exported, handy in tests); Logger may be nil (logs
// are discarded).
type GateDeps struct {
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// NewGate builds a Gate.
func NewGate(deps GateDeps, cfg GateConfig) (*Gate, error) {
	reg, log := deps.Registerer, deps.Logger
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sc, err := NewScanner(cfg.Scanner)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Gate{scanner: sc, metrics: m, salt: append([]byte(nil), cfg.FingerprintSalt...), log: log}, nil
}

// Scanner exposes the gate's scanner for callers that only need findings
// (for example a rescan of stored chunks).
func (g *Gate) Scanner() *Scanner { return g.scanner }

// Check applies p to text for one event. The error is a *BlockedError
// (errors.Is(err, ErrBlocked)) when the policy blocks the text; the Result
// and audit records are returned either way. Nothing returned or logged
// contains a raw finding value.
func (g *Gate) Check(eventID string, text string, p Policy) (Result, []AuditRecord, error) {
	start := time.Now()
	res, err := g.scanner.Apply(text, p)
	g.metrics.scanTime.Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, ErrBlocked) {
		return res, nil, fmt.Errorf("defense check event %s: %w", eventID, err)
	}
	var audit []AuditRecord
	if len(res.Findings) > 0 {
		audit = make([]AuditRecord, len(res.Findings))
		for i, f := range res.Findings {
			audit[i] = AuditRecord{
				Label:       f.Label,
				Action:      f.Action,
				EventID:     eventID,
				Fingerprint: Fingerprint(g.salt, text[f.Start:f.End]),
			}
			g.metrics.findings.WithLabelValues(f.Label, string(f.Action)).Inc()
			g.log.Debug("defense finding",
				slog.String("event_id", eventID),
				slog.String("label", f.Label),
				slog.String("action", string(f.Action)),
				slog.String("fingerprint", audit[i].Fingerprint))
		}
	}
	if res.Blocked {
		g.log.Info("defense blocked text",
			slog.String("event_id", eventID),
			slog.Any("labels", res.BlockedLabels))
	}
	return res, audit, err
}
