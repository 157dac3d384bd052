package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCLIBasics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantOut string
		wantErr string
	}{
		{name: "version", args: []string{"version"}, wantOut: "memstream " + version},
		{name: "help", args: []string{"help"}, wantOut: "memstream serve"},
		{name: "unknown", args: []string{"frobnicate"}, wantErr: `unknown command "frobnicate"`},
		{name: "config print masks", args: []string{"config", "print", "--set", "llm.api_key=sk-supersecret"}, wantOut: "api_key: '****'"},
		{name: "bad config names key", args: []string{"config", "print", "--set", "kafka.max_event_bytes=-1"}, wantErr: "kafka.max_event_bytes"},
		{name: "bad env names key", args: []string{"config", "print"}, env: map[string]string{"MEMSTREAM_LLM_PROVIDER": "magic"}, wantErr: "llm.provider"},
		{name: "bad role", args: []string{"serve", "--roles", "ingest,chef"}, wantErr: `unknown role "chef"`},
		{name: "recall needs bank", args: []string{"recall", "hello"}, wantErr: "--bank"},
		{name: "produce needs file", args: []string{"produce"}, wantErr: "FILE.jsonl"},
		{name: "bench needs name", args: []string{"bench"}, wantErr: "name a benchmark"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			err := run(tc.args, &out, &errOut)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v (stderr %s)", err, errOut.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Fatalf("stdout %q does not contain %q", out.String(), tc.wantOut)
			}
			if strings.Contains(out.String(), "sk-supersecret") {
				t.Fatal("secret printed")
			}
		})
	}
}
