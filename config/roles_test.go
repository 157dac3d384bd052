package config

import (
	"strings"
	"testing"
)

func TestParseRoles(t *testing.T) {
	for in, want := range map[string]Roles{
		"ingest,api,worker": AllRoles,
		"api":               {API: true},
		" worker , ingest":  {Ingest: true, Worker: true},
		"api,,":             {API: true},
	} {
		got, err := ParseRoles(in)
		if err != nil || got != want {
			t.Errorf("ParseRoles(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"ingest,chef": `unknown role "chef"`,
		"":            "at least one",
		" , ":         "at least one",
	} {
		if _, err := ParseRoles(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseRoles(%q) error %v, want one containing %q", in, err, msg)
		}
	}
}
