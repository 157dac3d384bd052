package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
	"gopkg.in/yaml.v3"

	"github.com/memstream/memstream/config"
)

// yamlDocs parses every document of a YAML file.
func yamlDocs(t *testing.T, path string) []any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var docs []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if v != nil {
			docs = append(docs, v)
		}
	}
	return docs
}

func filesWithExt(t *testing.T, root string, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, e := range exts {
			if !d.IsDir() && strings.HasSuffix(p, e) {
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

var metricNameRE = regexp.MustCompile(`Name:\s*"(memstream_[a-z0-9_]+)"`)

// exportedMetrics collects every metric name memstream's Go sources register
// (Name: "memstream_…" in non-test files) plus the names the kprom hooks
// export under the namespaces cmd/memstream gives them.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, p := range filesWithExt(t, "..", ".go") {
		if strings.HasSuffix(p, "_test.go") || strings.Contains(p, string(filepath.Separator)+".") {
			continue
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metricNameRE.FindAllSubmatch(raw, -1) {
			names[string(m[1])] = true
		}
	}
	if len(names) < 20 {
		t.Fatalf("found only %d metric names in the Go sources; is the walk rooted at the repository?", len(names))
	}
	for n := range kpromMetrics(t) {
		names[n] = true
	}
	return names
}

// kpromMetrics runs a producer and a consumer with kprom hooks configured as
// cmd/memstream/app.go configures them (namespaces memstream_kafka and
// memstream_kafka_consumer) against kfake, and returns what they export.
func kpromMetrics(t *testing.T) map[string]bool {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := prometheus.NewRegistry()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.WithHooks(kprom.NewMetrics("memstream_kafka", kprom.Registerer(reg), kprom.WithClientLabel())))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("t"),
		kgo.WithHooks(kprom.NewMetrics("memstream_kafka_consumer", kprom.Registerer(reg))))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for n := 0; n == 0 && ctx.Err() == nil; {
		n = cons.PollFetches(ctx).NumRecords()
	}
	// The produce and fetch hooks run after the calls above return: poll.
	want := []string{"memstream_kafka_produce_bytes_total", "memstream_kafka_consumer_fetch_bytes_total"}
	for {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, mf := range mfs {
			out[mf.GetName()] = true
		}
		missing := ""
		for _, w := range want {
			if !out[w] {
				missing = w
			}
		}
		if missing == "" {
			return out
		}
		if ctx.Err() != nil {
			t.Fatalf("kprom did not export %s; got %v", missing, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	exprMetricRE = regexp.MustCompile(`\bmemstream_[a-zA-Z0-9_]+`)
	routeLabelRE = regexp.MustCompile(`route\s*=~?\s*"([^"]*)"`)
	routeTableRE = regexp.MustCompile(`\{"(?:GET|POST|PUT|PATCH|DELETE)",\s*[^,]+,\s*"([a-z_]+)"`)
)

// checkExpr fails for every memstream metric the PromQL expression names
// that memstream does not export (histogram series map to their base name)
// and for every route label value that is not an API route.
func checkExpr(t *testing.T, where, expr string, exported, routes map[string]bool) []string {
	t.Helper()
	var used []string
	for _, name := range exprMetricRE.FindAllString(expr, -1) {
		base := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if !exported[base] && strings.HasSuffix(base, suf) {
				base = strings.TrimSuffix(base, suf)
			}
		}
		if !exported[base] {
			t.Errorf("%s: %q names metric %s, which memstream does not export", where, expr, name)
			continue
		}
		used = append(used, base)
	}
	for _, m := range routeLabelRE.FindAllStringSubmatch(expr, -1) {
		if !routes[m[1]] {
			t.Errorf("%s: route=%q is not a route name of recallapi", where, m[1])
		}
	}
	return used
}

func apiRoutes(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("../recallapi/server.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]bool{}
	for _, m := range routeTableRE.FindAllSubmatch(raw, -1) {
		routes[string(m[1])] = true
	}
	if !routes["recall"] {
		t.Fatalf("no recall route found in recallapi/server.go (parsed %v)", routes)
	}
	return routes
}

func TestYAMLFilesParse(t *testing.T) {
	files := filesWithExt(t, ".", ".yml", ".yaml")
	if len(files) < 10 {
		t.Fatalf("found only %d YAML files: %v", len(files), files)
	}
	for _, f := range files {
		if docs := yamlDocs(t, f); len(docs) == 0 {
			t.Errorf("%s: no YAML document", f)
		}
	}
}

type dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func TestDashboardNamesExportedMetrics(t *testing.T) {
	exported, routes := exportedMetrics(t), apiRoutes(t)
	files := filesWithExt(t, "grafana/dashboards", ".json")
	if len(files) == 0 {
		t.Fatal("no dashboard JSON in grafana/dashboards")
	}
	used := map[string]bool{}
	recallLatency := false
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || len(d.Panels) == 0 {
			t.Fatalf("%s: no uid or no panels", f)
		}
		for _, p := range d.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", f, p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s: panel %q has an empty query", f, p.Title)
				}
				for _, n := range checkExpr(t, f+": panel "+p.Title, tg.Expr, exported, routes) {
					used[n] = true
				}
				if strings.Contains(tg.Expr, "memstream_api_request_seconds_bucket") && strings.Contains(tg.Expr, `route="recall"`) {
					recallLatency = true
				}
			}
		}
	}
	// The panels the operations guide promises.
	for _, want := range []string{
		"memstream_pipeline_events_persisted_total", // ingest rate
		"memstream_consumer_lag_records",            // lag per partition
		"memstream_pipeline_stage_seconds",          // stage latencies
		"memstream_pipeline_dead_letters_total",     // DLQ rate
		"memstream_consolidation_backlog_facts",     // consolidation backlog
	} {
		if !used[want] {
			t.Errorf("no dashboard panel shows %s", want)
		}
	}
	if !recallLatency {
		t.Error("no dashboard panel shows recall latency (memstream_api_request_seconds_bucket{route=\"recall\"})")
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
			For   string `yaml:"for"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func TestAlertsNameExportedMetrics(t *testing.T) {
	exported, routes := exportedMetrics(t), apiRoutes(t)
	raw, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	n := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			n++
			if r.Alert == "" || strings.TrimSpace(r.Expr) == "" || r.For == "" {
				t.Errorf("group %s: rule %q needs alert, expr and for", g.Name, r.Alert)
			}
			for _, m := range checkExpr(t, "alerts.yml: "+r.Alert, r.Expr, exported, routes) {
				used[m] = true
			}
		}
	}
	if n == 0 {
		t.Fatal("alerts.yml has no rules")
	}
	for _, want := range []string{
		"memstream_consumer_lag_records",                        // lag growing
		"memstream_pipeline_dead_letters_total",                 // DLQ rate
		"memstream_consolidation_oldest_unconsolidated_seconds", // backlog age
		"memstream_api_request_seconds",                         // recall p99
	} {
		if !used[want] {
			t.Errorf("no alert uses %s", want)
		}
	}

	// The Prometheus Operator copy must carry exactly the same rules.
	var pr map[string]any
	for _, d := range yamlDocs(t, "k8s/prometheus-rules.yaml") {
		pr = d.(map[string]any)
	}
	var alerts any
	if err := yaml.Unmarshal(raw, &alerts); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pr["spec"], alerts) {
		t.Error("k8s/prometheus-rules.yaml spec differs from prometheus/alerts.yml; regenerate it")
	}
}

// TestAutoscalerMetric: the ingest HPA's external metric is the one the
// prometheus-adapter rule serves, and that rule's queries name exported
// metrics.
func TestAutoscalerMetric(t *testing.T) {
	exported, routes := exportedMetrics(t), apiRoutes(t)
	var adapter struct {
		ExternalRules []struct {
			SeriesQuery  string `yaml:"seriesQuery"`
			MetricsQuery string `yaml:"metricsQuery"`
			Name         struct {
				As string `yaml:"as"`
			} `yaml:"name"`
		} `yaml:"externalRules"`
	}
	cm := yamlDocs(t, "k8s/prometheus-adapter-rules.yaml")[0].(map[string]any)
	if err := yaml.Unmarshal([]byte(cm["data"].(map[string]any)["config.yaml"].(string)), &adapter); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, r := range adapter.ExternalRules {
		checkExpr(t, "adapter seriesQuery", r.SeriesQuery, exported, routes)
		checkExpr(t, "adapter metricsQuery", r.MetricsQuery, exported, routes)
		served[r.Name.As] = true
	}
	found := false
	for _, d := range yamlDocs(t, "k8s/hpa.yaml") {
		var hpa struct {
			Metadata struct{ Name string } `yaml:"metadata"`
			Spec     struct {
				Metrics []struct {
					Type     string `yaml:"type"`
					External struct {
						Metric struct{ Name string } `yaml:"metric"`
					} `yaml:"external"`
				} `yaml:"metrics"`
			} `yaml:"spec"`
		}
		b, _ := yaml.Marshal(d)
		if err := yaml.Unmarshal(b, &hpa); err != nil {
			t.Fatal(err)
		}
		for _, m := range hpa.Spec.Metrics {
			if m.Type != "External" {
				continue
			}
			found = true
			if !served[m.External.Metric.Name] {
				t.Errorf("HPA %s scales on %s, which no adapter rule serves (%v)", hpa.Metadata.Name, m.External.Metric.Name, served)
			}
		}
	}
	if !found {
		t.Error("no HPA scales on an external (lag) metric")
	}
}

var envNameRE = regexp.MustCompile(`\bMEMSTREAM_[A-Z0-9_]+\b`)

// TestEnvironmentNamesAreConfigKeys: every MEMSTREAM_* variable a manifest
// sets is a configuration key, so a typo cannot be silently ignored.
func TestEnvironmentNamesAreConfigKeys(t *testing.T) {
	keys := map[string]bool{}
	for _, k := range config.Keys() {
		keys[k[1]] = true
	}
	// Build-time and compose-interpolation variables, not configuration.
	notConfig := map[string]bool{"MEMSTREAM_API_KEY": true, "MEMSTREAM_AUDIT_SALT": true}
	files := append(filesWithExt(t, ".", ".yml", ".yaml"), "Dockerfile")
	seen := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range envNameRE.FindAllString(string(raw), -1) {
			seen++
			if !keys[name] && !notConfig[name] {
				t.Errorf("%s: %s is not a configuration key (memstream config print lists them)", f, name)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("only %d MEMSTREAM_ variables found; is the walk rooted at deploy/?", seen)
	}
}

// TestDeploymentsPerRole: one Deployment per role running that role, probed
// on /health and /health/ready, with resource requests and the secret wiring.
func TestDeploymentsPerRole(t *testing.T) {
	roles := map[string]bool{}
	for _, f := range filesWithExt(t, "k8s", ".yaml") {
		for _, d := range yamlDocs(t, f) {
			var dep struct {
				Kind     string `yaml:"kind"`
				Metadata struct {
					Name   string            `yaml:"name"`
					Labels map[string]string `yaml:"labels"`
				} `yaml:"metadata"`
				Spec struct {
					Template struct {
						Spec struct {
							Grace      int `yaml:"terminationGracePeriodSeconds"`
							Containers []struct {
								Args      []string `yaml:"args"`
								Liveness  probe    `yaml:"livenessProbe"`
								Readiness probe    `yaml:"readinessProbe"`
								Resources struct {
									Requests map[string]string `yaml:"requests"`
								} `yaml:"resources"`
								Env []struct {
									Name string `yaml:"name"`
								} `yaml:"env"`
							} `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			b, _ := yaml.Marshal(d)
			if err := yaml.Unmarshal(b, &dep); err != nil {
				t.Fatal(err)
			}
			if dep.Kind != "Deployment" {
				continue
			}
			role := dep.Metadata.Labels["app.kubernetes.io/component"]
			roles[role] = true
			ps := dep.Spec.Template.Spec
			if len(ps.Containers) != 1 {
				t.Fatalf("%s: want one container", dep.Metadata.Name)
			}
			c := ps.Containers[0]
			if strings.Join(c.Args, " ") != "serve --roles "+role {
				t.Errorf("%s: args %v, want serve --roles %s", dep.Metadata.Name, c.Args, role)
			}
			if c.Liveness.HTTPGet.Path != "/health" || c.Readiness.HTTPGet.Path != "/health/ready" {
				t.Errorf("%s: probes %q/%q, want /health and /health/ready", dep.Metadata.Name, c.Liveness.HTTPGet.Path, c.Readiness.HTTPGet.Path)
			}
			if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
				t.Errorf("%s: cpu and memory requests required", dep.Metadata.Name)
			}
			env := map[string]bool{}
			for _, e := range c.Env {
				env[e.Name] = true
			}
			for _, want := range []string{"MEMSTREAM_DATABASE_URL", "MEMSTREAM_AUTH_KEYS", "MEMSTREAM_DEFENSE_AUDIT_SALT"} {
				if !env[want] {
					t.Errorf("%s: %s not wired from the Secret", dep.Metadata.Name, want)
				}
			}
			// Longer than kafka.shutdown_timeout (30s in configmap.yaml), so
			// the drain and the final commit finish before SIGKILL.
			if ps.Grace <= 30 {
				t.Errorf("%s: terminationGracePeriodSeconds %d must exceed kafka.shutdown_timeout (30s)", dep.Metadata.Name, ps.Grace)
			}
		}
	}
	for _, r := range []string{"ingest", "api", "worker"} {
		if !roles[r] {
			t.Errorf("no Deployment for role %s", r)
		}
	}
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
	} `yaml:"httpGet"`
}
