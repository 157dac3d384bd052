package priority

import (
	"io"
	"net/http"
	"sync"
)

// Transport is an http.RoundTripper that holds a slot of Gate for each
// request, from before it is sent until its response body is closed (or
// the request fails), in the class of the request's context. Every client
// of one LLM endpoint shares one Transport, so extraction, reflect and
// consolidation draw on one budget of concurrent calls, live ones first.
type Transport struct {
	Gate *Gate
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	release, err := t.Gate.Acquire(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releasingBody gives the slot back when the body is closed or read to
// its end, whichever comes first.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.release)
	}
	return n, err
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// HTTPClient returns a client whose requests hold a slot of g each (a
// Transport over base; nil base means http.DefaultTransport). A nil g
// holds no slots: the client sends through base alone.
func (g *Gate) HTTPClient(base http.RoundTripper) *http.Client {
	if g == nil {
		return &http.Client{Transport: base}
	}
	return &http.Client{Transport: &Transport{Gate: g, Base: base}}
}
