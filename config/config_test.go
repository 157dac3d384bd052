package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGoodFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.yml")
	if len(files) == 0 {
		t.Fatal("no good fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := Load(f, nil, nil); err != nil {
				t.Fatalf("Load: %v", err)
			}
		})
	}
}

func TestFullFileValues(t *testing.T) {
	cfg, err := Load("testdata/full.good.yml", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kafka.Embedded() || len(cfg.Kafka.Brokers) != 2 || cfg.Kafka.CommitInterval != 2*time.Second {
		t.Errorf("kafka = %+v", cfg.Kafka)
	}
	if cfg.Embed.Dim != 768 || cfg.LLM.Provider != "openai" {
		t.Errorf("providers = %+v %+v", cfg.Embed, cfg.LLM)
	}
	// 0 keeps the defense audit forever; it is not the 90-day default.
	if cfg.HTTP.AuditRetention != 90*24*time.Hour || cfg.Defense.AuditRetention != 0 {
		t.Errorf("audit retentions = %s, %s; want 2160h and 0 (forever)", cfg.HTTP.AuditRetention, cfg.Defense.AuditRetention)
	}
	// Defaults survive for keys the file does not name.
	if cfg.Kafka.Group != "memstream-ingest" || cfg.Pipeline.ChunkMaxChars != 3000 {
		t.Errorf("defaults lost: %+v", cfg)
	}
}

// Each bad file must fail naming the key an operator has to fix.
func TestBadFiles(t *testing.T) {
	want := map[string]string{
		"bad-url.bad.yml":          "database.url",
		"bad-read-url.bad.yml":     "database.read_url",
		"negative-size.bad.yml":    "kafka.max_event_bytes",
		"unknown-provider.bad.yml": "llm.provider",
		"unknown-key.bad.yml":      "brokerz",
		"open-bind.bad.yml":        "http.addr",
		"bad-scope.bad.yml":        "auth.keys[0].scopes",
		"bad-duration.bad.yml":     "kafka.commit_interval",
		"bad-dim.bad.yml":          "embed.dim",
		"facts-cap.bad.yml":        "pipeline.max_facts_per_chunk",
		"local-dim.bad.yml":        "embed.dim",
		"local-model.bad.yml":      "embed.model",
		"use-dim.bad.yml":          "embed.dim", // the USE alone makes 512, not the default 896
		"trace-cap.bad.yml":        "llm.trace_max_per_bank",
		"trace-retention.bad.yml":  "llm.trace_retention",
		"audit-retention.bad.yml":  "http.audit_retention",
		"defense-audit.bad.yml":    "defense.audit_retention",
		// yaml.v3 names only the line of a type error; Load names the key.
		"audit-switch.bad.yml": "http.audit_log_enabled",
	}
	files, _ := filepath.Glob("testdata/*.bad.yml")
	if len(files) != len(want) {
		t.Fatalf("%d bad fixtures, %d expectations", len(files), len(want))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f, nil, nil)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if key := want[filepath.Base(f)]; !strings.Contains(err.Error(), key) {
				t.Fatalf("error %q does not name %q", err, key)
			}
		})
	}
}

func TestEnvAndOverrides(t *testing.T) {
	env := []string{
		"MEMSTREAM_DATABASE_URL=postgres://u:p@h:5432/d",
		"MEMSTREAM_KAFKA_BROKERS=a:1, b:2",
		"MEMSTREAM_HTTP_ADDR=127.0.0.1:9999",
		"MEMSTREAM_EMBED_PROVIDER=hash",
		"MEMSTREAM_EMBED_DIM=256",
		"MEMSTREAM_LLM_API_KEY=sk-secret",
		"MEMSTREAM_DATA_DIR=/tmp/ms",
		"MEMSTREAM_KAFKA_COMMIT_INTERVAL=250ms",
		"MEMSTREAM_AUTH_KEYS=[{\"key\":\"k\",\"banks\":[\"*\"],\"scopes\":[\"read\"]}]",
		"OTHER=ignored",
	}
	cfg, err := Load("", env, []string{"http.addr=127.0.0.1:7777"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database.URL != "postgres://u:p@h:5432/d" || len(cfg.Kafka.Brokers) != 2 || cfg.Kafka.Brokers[1] != "b:2" {
		t.Errorf("env not applied: %+v %+v", cfg.Database, cfg.Kafka.Brokers)
	}
	if cfg.HTTP.Addr != "127.0.0.1:7777" {
		t.Errorf("flag override lost to env: %s", cfg.HTTP.Addr)
	}
	if cfg.Embed.Dim != 256 || cfg.DataDir != "/tmp/ms" || cfg.Kafka.CommitInterval != 250*time.Millisecond {
		t.Errorf("env: %+v", cfg)
	}
	if len(cfg.Auth.Keys) != 1 || cfg.Auth.Keys[0].Scopes[0] != "read" {
		t.Errorf("auth keys from env: %+v", cfg.Auth.Keys)
	}
	out := Print(cfg)
	for _, secret := range []string{"sk-secret", ":p@", "key: k\n"} {
		if strings.Contains(out, secret) {
			t.Errorf("Print leaks %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "u:****@h") {
		t.Errorf("Print does not show the masked URL:\n%s", out)
	}
}

func TestEnvBadValueNamesVariable(t *testing.T) {
	_, err := Load("", []string{"MEMSTREAM_EMBED_DIM=lots"}, nil)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "embed.dim" || !strings.Contains(err.Error(), "MEMSTREAM_EMBED_DIM") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Load("", nil, []string{"nope.key=1"}); err == nil || !strings.Contains(err.Error(), "nope.key") {
		t.Fatalf("unknown override: %v", err)
	}
}

func TestEveryKeyHasEnvName(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Keys() {
		if seen[k[1]] {
			t.Errorf("duplicate env name %s", k[1])
		}
		seen[k[1]] = true
	}
	for _, must := range []string{"MEMSTREAM_DATABASE_URL", "MEMSTREAM_KAFKA_BROKERS", "MEMSTREAM_HTTP_ADDR",
		"MEMSTREAM_LLM_BASE_URL", "MEMSTREAM_LLM_API_KEY", "MEMSTREAM_LLM_MODEL", "MEMSTREAM_EMBED_PROVIDER",
		"MEMSTREAM_EMBED_BASE_URL", "MEMSTREAM_EMBED_MODEL", "MEMSTREAM_EMBED_DIM", "MEMSTREAM_DATA_DIR"} {
		if !seen[must] {
			t.Errorf("spec variable %s missing", must)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yml"), nil, nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestLogNewLogger(t *testing.T) {
	var b bytes.Buffer
	Log{Level: "warn", Format: "json"}.NewLogger(&b).Info("dropped")
	Log{Level: "warn", Format: "json"}.NewLogger(&b).Warn("kept")
	if got := b.String(); strings.Contains(got, "dropped") || !strings.HasPrefix(got, `{"time"`) || !strings.Contains(got, `"msg":"kept"`) {
		t.Errorf("json logger at warn wrote %q", got)
	}
	b.Reset()
	Log{}.NewLogger(&b).Info("hello")
	if got := b.String(); !strings.Contains(got, "level=INFO msg=hello") {
		t.Errorf("default logger wrote %q", got)
	}
}
