package eval

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memstream/memstream/recall"
)

func TestAPIRecallerRequestAndMapping(t *testing.T) {
	var got apiRecallRequest
	var path, auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, auth = r.URL.EscapedPath(), r.Header.Get("Authorization")
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("decode request: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"results":[
			{"id":"a","text":"Alice moved to Lisbon","document_id":"s-3","metadata":{"message_index":"4","role":"user"},"tokens":7,"scores":{"final":0.91}},
			{"id":"b","text":"Alice likes tea","document_id":"s-1","metadata":{},"tokens":0,"scores":{"final":0.5}},
			{"id":"c","text":"observation","document_id":"","metadata":{"message_index":"x"},"scores":{"final":0.2}}
		]}`))
	}))
	defer srv.Close()
	r, err := NewAPIRecaller(APIRecallerDeps{Client: srv.Client()}, APIRecallerConfig{BaseURL: srv.URL + "/", Token: "k1", MaxTokens: 900,
		Arms: []string{"keyword"}, Fusion: "interleave", Types: []string{"world"}})
	if err != nil {
		t.Fatal(err)
	}
	qt := time.Date(2026, 3, 14, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	res, took, err := r.Recall(context.Background(), "bank one", "Where does Alice live?", qt)
	if err != nil {
		t.Fatal(err)
	}
	if path != "/v1/default/banks/bank%20one/memories/recall" {
		t.Errorf("path = %q", path)
	}
	if auth != "Bearer k1" {
		t.Errorf("Authorization = %q", auth)
	}
	if got.Query != "Where does Alice live?" || got.MaxTokens != 900 || got.Fusion != "interleave" ||
		!slices.Equal(got.Arms, []string{"keyword"}) || !slices.Equal(got.Types, []string{"world"}) {
		t.Errorf("request = %+v", got)
	}
	if got.QueryTimestamp != "2026-03-14T08:30:00Z" {
		t.Errorf("query_timestamp = %q, want the UTC instant", got.QueryTimestamp)
	}
	if took <= 0 {
		t.Errorf("latency %v, want > 0", took)
	}
	want := []Retrieved{
		{ID: "a", Text: "Alice moved to Lisbon", SessionID: "s-3", TurnIndex: 4, Score: 0.91, Tokens: 7},
		{ID: "b", Text: "Alice likes tea", SessionID: "s-1", TurnIndex: UnknownTurn, Score: 0.5},
		{ID: "c", Text: "observation", TurnIndex: UnknownTurn, Score: 0.2},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("results\n got %+v\nwant %+v", res, want)
	}
}

func TestAPIRecallerOmitsUnsetFields(t *testing.T) {
	var raw map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&raw)
		_, _ = w.Write([]byte(`{"results":[]}`))
	}))
	defer srv.Close()
	r, err := NewAPIRecaller(APIRecallerDeps{}, APIRecallerConfig{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := r.Recall(context.Background(), "b", "q", time.Time{})
	if err != nil || len(res) != 0 {
		t.Fatalf("Recall = %v, %v", res, err)
	}
	// Empty arms would be a request for no arm at all on some servers;
	// the default budget must be sent so answer-in-context is comparable.
	for _, k := range []string{"arms", "fusion", "types", "query_timestamp"} {
		if _, ok := raw[k]; ok {
			t.Errorf("request has %q although it was not set: %v", k, raw)
		}
	}
	if raw["max_tokens"] != float64(2048) {
		t.Errorf("max_tokens = %v, want the default 2048", raw["max_tokens"])
	}
}

func TestAPIRecallerErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/banks/plain/") {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"code":"invalid_request","message":"arms: unknown arm \"x\""}}`))
	}))
	defer srv.Close()
	r, err := NewAPIRecaller(APIRecallerDeps{}, APIRecallerConfig{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = r.Recall(context.Background(), "b", "q", time.Time{})
	if err == nil || !strings.Contains(err.Error(), `unknown arm "x"`) || !strings.Contains(err.Error(), "400") {
		t.Errorf("error = %v, want the API's message and status", err)
	}
	_, _, err = r.Recall(context.Background(), "plain", "q", time.Time{})
	if err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("error = %v, want HTTP 502", err)
	}
}

func TestAPIRecallerConfigValidate(t *testing.T) {
	for _, c := range []APIRecallerConfig{
		{},
		{BaseURL: "localhost:8888"},
		{BaseURL: "http://x", Fusion: "sum"},
		{BaseURL: "http://x", MaxTokens: -1},
	} {
		if _, err := NewAPIRecaller(APIRecallerDeps{}, c); err == nil {
			t.Errorf("NewAPIRecaller(%+v) accepted a bad config", c)
		}
	}
}

func TestAblationVariantsCoverEveryArm(t *testing.T) {
	vs := AblationVariants()
	names := map[string]bool{}
	alone := map[string]bool{}
	for _, v := range vs {
		if names[v.Name] {
			t.Errorf("duplicate variant name %q", v.Name)
		}
		names[v.Name] = true
		if len(v.Arms) == 1 {
			alone[v.Arms[0]] = true
		}
		if v.Fusion != "" && v.Fusion != "rrf" && v.Fusion != "interleave" {
			t.Errorf("variant %q has fusion %q", v.Name, v.Fusion)
		}
	}
	for _, a := range RecallArms {
		if !alone[a] {
			t.Errorf("no variant runs arm %s alone", a)
		}
	}
	if !slices.ContainsFunc(vs, func(v Variant) bool { return v.Fusion == "interleave" }) {
		t.Error("no interleave variant")
	}
	if !slices.ContainsFunc(vs, func(v Variant) bool {
		return len(v.Types) > 0 && !slices.Contains(v.Types, "observation")
	}) {
		t.Error("no variant without observations")
	}
	// Every heuristic recall can switch off has its row, under the name
	// recall knows it by.
	if !slices.Equal(Heuristics, recall.Heuristics) {
		t.Errorf("eval ablates heuristics %v, recall has %v", Heuristics, recall.Heuristics)
	}
	for _, h := range recall.Heuristics {
		if !slices.ContainsFunc(vs, func(v Variant) bool { return slices.Equal(v.Off, []string{h}) }) {
			t.Errorf("no variant with heuristic %s off", h)
		}
	}
}

type fixedRecaller []Retrieved

func (f fixedRecaller) Recall(context.Context, string, string, time.Time) ([]Retrieved, time.Duration, error) {
	return append([]Retrieved(nil), f...), time.Millisecond, nil
}

func TestCollapseKeepsTheFirstOfEachText(t *testing.T) {
	in := fixedRecaller{
		{ID: "1", Text: "Good to know!", SessionID: "s1", TurnIndex: 3},
		{ID: "2", Text: " good to know! ", SessionID: "s2", TurnIndex: 5},
		{ID: "3", Text: "I moved to Fremont.", SessionID: "s3", TurnIndex: 1},
		{ID: "4", Text: "Good to know!", SessionID: "s4", TurnIndex: 7},
	}
	got, took, err := Collapse{in}.Recall(context.Background(), "b", "q", time.Time{})
	if err != nil || took != time.Millisecond {
		t.Fatalf("Recall: %v, %v", took, err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"1", "3"}) {
		t.Errorf("kept %v, want [1 3]", ids)
	}
}

func TestAPIRecallerResolvesObservationSources(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/v1/default/banks/b/memories/recall":
			_, _ = w.Write([]byte(`{"results":[
				{"id":"obs-1","type":"observation","text":"Alice lives in Lisbon","document_id":"","metadata":{},"scores":{"final":0.9}},
				{"id":"f-9","type":"world","text":"Alice likes tea","document_id":"s-2","metadata":{"message_index":"1"},"scores":{"final":0.4}}]}`))
		case "/v1/default/banks/b/observations/obs-1":
			_, _ = w.Write([]byte(`{"id":"obs-1","evidence":[{"memory_id":"m-1"},{"memory_id":"m-2"}]}`))
		case "/v1/default/banks/b/memories/m-1":
			_, _ = w.Write([]byte(`{"id":"m-1","document_id":"s-1","metadata":{"message_index":"4"}}`))
		case "/v1/default/banks/b/memories/m-2":
			_, _ = w.Write([]byte(`{"id":"m-2","document_id":"s-3","metadata":{}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	r, err := NewAPIRecaller(APIRecallerDeps{}, APIRecallerConfig{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := r.Recall(context.Background(), "b", "where does Alice live", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Evidence{{SessionID: "s-1", TurnIndex: 4}, {SessionID: "s-3", TurnIndex: UnknownTurn}}
	if len(res) != 2 || res[0].TurnIndex != UnknownTurn || !slices.Equal(res[0].Sources, want) {
		t.Fatalf("observation result = %+v, want sources %v", res, want)
	}
	if res[1].Sources != nil {
		t.Errorf("a fact got sources %v", res[1].Sources)
	}
	// A recaller for another variant shares the cache: the observation is
	// looked up once however often it is returned.
	other, err := r.With([]string{"semantic"}, "interleave", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Recall(context.Background(), "b", "again", time.Time{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["/v1/default/banks/b/observations/obs-1"] != 1 || calls["/v1/default/banks/b/memories/m-1"] != 1 {
		t.Errorf("lookups %v, want one per observation and fact", calls)
	}
	if _, err := r.With(nil, "sum", nil, nil); err == nil {
		t.Error("With accepted fusion \"sum\"")
	}
}
