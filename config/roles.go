package config

import (
	"errors"
	"fmt"
	"strings"
)

// Roles selects what a process runs (SPEC §2, serve --roles).
type Roles struct{ Ingest, API, Worker bool }

// AllRoles is what a single process runs by default.
var AllRoles = Roles{Ingest: true, API: true, Worker: true}

// ParseRoles reads --roles: a comma-separated list of ingest, api and
// worker, at least one of them.
func ParseRoles(s string) (Roles, error) {
	var r Roles
	for _, p := range strings.Split(s, ",") {
		switch strings.TrimSpace(p) {
		case "ingest":
			r.Ingest = true
		case "api":
			r.API = true
		case "worker":
			r.Worker = true
		case "":
		default:
			return r, fmt.Errorf("--roles: unknown role %q (ingest, api, worker)", p)
		}
	}
	if !r.Ingest && !r.API && !r.Worker {
		return r, errors.New("--roles: name at least one of ingest, api, worker")
	}
	return r, nil
}
