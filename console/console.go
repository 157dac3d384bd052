package console

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// dist is the Vite build output (make console). It is committed, so a
// fresh clone builds with go alone; TestBundleMatchesSources in the
// browser suite rebuilds it and fails when it differs from web/.
//
//go:embed all:dist
var dist embed.FS

// Prefix is the path the console is served under.
const Prefix = "/console/"

// contentSecurityPolicy allows only the console's own scripts, styles and
// API calls: nothing the page renders from memory text can load or run
// anything else.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the embedded console under Prefix. Hashed assets are
// cached for a year; index.html never, so a new binary's console loads at
// once.
func Handler() (http.Handler, error) {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	files := http.FileServerFS(sub)
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		return nil, fmt.Errorf("console: the embedded build has no index.html (run make console): %w", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		name := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(r.URL.Path, "/console")), "/")
		if name == "" || name == "." {
			name = "index.html"
		}
		if name != "index.html" {
			if _, err := fs.Stat(sub, name); err != nil {
				http.NotFound(w, r)
				return
			}
		}
		if strings.HasPrefix(name, "assets/") {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		if name == "index.html" {
			// FileServer would redirect /index.html to /; serve it here.
			h.Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(index)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	}), nil
}
