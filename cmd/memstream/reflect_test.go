package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memstream/memstream/reflect"
)

func TestCmdReflectPrintsAnswerAndSources(t *testing.T) {
	t.Parallel()
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/default/banks/alice/reflect" {
			http.Error(w, `{"error":{"code":"not_found","message":"no route"}}`, http.StatusNotFound)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("request body: %v", err)
		}
		_ = json.NewEncoder(w).Encode(reflect.Response{
			Text:       "Alice lives in Shanghai [o-1].",
			BasedOn:    reflect.BasedOn{Observations: []string{"o-1"}, Memories: []string{"m-1"}, MentalModels: []string{}},
			Extractive: true,
			Trace:      reflect.Trace{Iterations: 3, StopReason: "offline", ToolCalls: []reflect.ToolCall{{Tool: "search_mental_models"}, {Tool: "search_observations"}, {Tool: "recall"}}},
		})
	}))
	t.Cleanup(srv.Close)

	var out, errOut bytes.Buffer
	err := cmdReflect(context.Background(), []string{"--bank", "alice", "--api", srv.URL, "--disposition", "5,3,1", "Where", "does", "Alice", "live?"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v (stderr %s)", err, errOut.String())
	}
	if got["query"] != "Where does Alice live?" {
		t.Errorf("query sent = %v", got["query"])
	}
	if d, _ := got["disposition"].(map[string]any); d["skepticism"] != 5.0 || d["empathy"] != 1.0 {
		t.Errorf("disposition sent = %v", got["disposition"])
	}
	for _, want := range []string{"Alice lives in Shanghai [o-1].", "observation  o-1", "memory       m-1",
		"extractive (offline); 3 iterations", "search_mental_models → search_observations → recall"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := cmdReflect(context.Background(), []string{"--bank", "alice", "--api", srv.URL, "--json", "q"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var raw reflect.Response
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil || raw.Text != "Alice lives in Shanghai [o-1]." {
		t.Errorf("--json output %q: %v", out.String(), err)
	}

	for _, args := range [][]string{{"q"}, {"--bank", "alice"}, {"--bank", "alice", "--disposition", "6,1,1", "q"}} {
		if err := cmdReflect(context.Background(), append([]string{"--api", srv.URL}, args...), &out, &errOut); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	// An API error comes back with its code.
	err = cmdReflect(context.Background(), []string{"--bank", "bob", "--api", srv.URL, "q"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "404 not_found") {
		t.Errorf("API error = %v", err)
	}
}
