package mcpserver

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// Remote is the HTTP API of a memstream server at base (e.g.
// http://127.0.0.1:8888), as an http.Handler for Deps.API: the tools of a
// stdio session call it as they call the in-process API. When it cannot
// be reached, a tool answers 503 naming the address.
func Remote(base string) (http.Handler, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcp: the API address %q is not an http(s) URL", base)
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = u.Host
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, http.StatusServiceUnavailable, "unavailable", "",
				fmt.Sprintf("cannot reach the memstream API at %s (is memstream serve running?): %v", u, err))
		},
	}
	return p, nil
}
