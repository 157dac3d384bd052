package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Result()
}

func TestHandlerServesTheEmbeddedBuild(t *testing.T) {
	h, err := Handler()
	if err != nil {
		t.Fatal(err)
	}
	res := get(t, h, "/console/")
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(body), `<div id="root">`) {
		t.Fatalf("GET /console/: %d %s", res.StatusCode, body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q: want scripts from the console only, nothing unsafe", csp)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("index.html Cache-Control %q, want no-cache so a new binary's console loads at once", cc)
	}
	// Every asset index.html names is embedded and served as immutable.
	assets := regexp.MustCompile(`/console/(assets/[^"]+)`).FindAllStringSubmatch(string(body), -1)
	if len(assets) < 2 {
		t.Fatalf("index.html names %d assets, want a script and a stylesheet: %s", len(assets), body)
	}
	for _, a := range assets {
		res := get(t, h, "/console/"+a[1])
		if res.StatusCode != 200 {
			t.Errorf("GET /console/%s: %d", a[1], res.StatusCode)
		}
		if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("GET /console/%s Cache-Control %q, want immutable (the name carries the content hash)", a[1], cc)
		}
	}
}

func TestHandlerRefusesWhatIsNotInTheBuild(t *testing.T) {
	h, err := Handler()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/console/nope.js", "/console/assets/missing.css", "/console/../go.mod", "/console/%2e%2e/console.go"} {
		if res := get(t, h, p); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, res.StatusCode)
		}
	}
	// index.html under its own name is the page, not a redirect loop.
	if res := get(t, h, "/console/index.html"); res.StatusCode != 200 {
		t.Errorf("GET /console/index.html: %d", res.StatusCode)
	}
}
