package defense

import (
	"bytes"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

var testSalt = []byte("0123456789abcdef-test-salt")

func TestFingerprint(t *testing.T) {
	t.Parallel()
	a := Fingerprint(testSalt, "secret-value")
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a) {
		t.Fatalf("fingerprint %q is not 16 hex chars", a)
	}
	if a != Fingerprint(testSalt, "secret-value") {
		t.Fatal("fingerprint is not deterministic")
	}
	if a == Fingerprint([]byte("another-salt-0123456"), "secret-value") {
		t.Fatal("fingerprint ignores the salt")
	}
	if a == Fingerprint(testSalt, "secret-valuf") {
		t.Fatal("fingerprint ignores the secret")
	}
}

func TestNewGateValidates(t *testing.T) {
	t.Parallel()
	_, err := NewGate(GateDeps{}, GateConfig{FingerprintSalt: []byte("short")})
	if err == nil || !strings.Contains(err.Error(), "defense.fingerprint_salt") {
		t.Fatalf("err = %v, want one naming defense.fingerprint_salt", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := NewGate(GateDeps{Registerer: reg}, GateConfig{FingerprintSalt: testSalt}); err != nil {
		t.Fatal(err)
	}
	// A second gate on the same registry is a wiring bug: say so.
	if _, err := NewGate(GateDeps{Registerer: reg}, GateConfig{FingerprintSalt: testSalt}); err == nil {
		t.Fatal("duplicate registration not reported")
	}
}

func TestGateCheck(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	g, err := NewGate(GateDeps{Registerer: reg, Logger: log}, GateConfig{FingerprintSalt: testSalt})
	if err != nil {
		t.Fatal(err)
	}
	ghp := "ghp_" + rep("aZ09bY18", 4) + "cX27"
	awsID := "AKIA" + "Q2W3E4R5T6Y7U8I9"
	text := "token " + ghp + " and key " + awsID

	res, audit, err := g.Check("evt-1", text, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "token [REDACTED:github_pat] and key [REDACTED:aws_access_key_id]" {
		t.Fatalf("text = %q", res.Text)
	}
	want := []AuditRecord{
		{Label: "github_pat", Action: ActionRedact, EventID: "evt-1", Fingerprint: Fingerprint(testSalt, ghp)},
		{Label: "aws_access_key_id", Action: ActionRedact, EventID: "evt-1", Fingerprint: Fingerprint(testSalt, awsID)},
	}
	if len(audit) != len(want) {
		t.Fatalf("audit = %+v", audit)
	}
	for i := range want {
		if audit[i] != want[i] {
			t.Errorf("audit[%d] = %+v, want %+v", i, audit[i], want[i])
		}
	}

	_, _, blockErr := g.Check("evt-2", text, Policy{Labels: map[string]Action{"aws_access_key_id": ActionBlock}})
	if !errors.Is(blockErr, ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", blockErr)
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	var scans uint64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "memstream_defense_findings_total":
				key := ""
				for _, l := range m.GetLabel() {
					key += l.GetName() + "=" + l.GetValue() + ";"
				}
				counts[key] = m.GetCounter().GetValue()
			case "memstream_defense_scan_seconds":
				scans = m.GetHistogram().GetSampleCount()
			}
		}
	}
	if got := counts["action=redact;label=github_pat;"]; got != 2 {
		t.Errorf("github_pat redact count = %v, want 2 (%v)", got, counts)
	}
	if got := counts["action=block;label=aws_access_key_id;"]; got != 1 {
		t.Errorf("aws block count = %v, want 1 (%v)", got, counts)
	}
	if scans != 2 {
		t.Errorf("scan histogram count = %d, want 2", scans)
	}
	out := logs.String()
	if !strings.Contains(out, `"event_id":"evt-2"`) || !strings.Contains(out, "aws_access_key_id") {
		t.Errorf("logs miss the block record: %s", out)
	}
	if strings.Contains(out, ghp) || strings.Contains(out, awsID) || strings.Contains(blockErr.Error(), awsID) {
		t.Fatalf("raw secret leaked into logs or error:\n%s", out)
	}
}

func TestGateInvalidPolicy(t *testing.T) {
	t.Parallel()
	g, err := NewGate(GateDeps{}, GateConfig{FingerprintSalt: testSalt})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = g.Check("evt-9", "x", Policy{Labels: map[string]Action{"nope": ActionBlock}})
	if err == nil || errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "evt-9") {
		t.Fatalf("err = %v", err)
	}
}
