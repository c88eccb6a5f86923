package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/oauth"
)

// reply is one answer of the fake token endpoint.
type reply struct {
	status int           // 0 means 200
	body   string        // sent verbatim
	stall  time.Duration // pause after the status line, before the body
}

// jsonReply renders v as a 200 JSON answer.
func jsonReply(v any) reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return reply{body: string(b)}
}

// tokenEndpoint is a real local token endpoint: it records every form it
// receives, counts requests, and answers with whatever answer returns for the
// n-th request (1-based). When gated, every request waits for release.
type tokenEndpoint struct {
	srv  *httptest.Server
	hits atomic.Int64

	mu     sync.Mutex
	forms  []url.Values
	heads  []http.Header
	answer func(n int, form url.Values) reply

	gated    bool          // under mu
	release  chan struct{} // under mu; closed to let gated requests answer
	entered  chan struct{} // one value per gated request that arrived
	aborted  atomic.Int64  // gated requests whose client went away while waiting
	slowness time.Duration // under mu; sleep before answering
}

func newTokenEndpoint(t testing.TB, answer func(n int, form url.Values) reply) *tokenEndpoint {
	t.Helper()
	e := &tokenEndpoint{answer: answer, entered: make(chan struct{}, 1024), release: make(chan struct{})}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(func() {
		e.open()
		e.srv.Close()
	})
	return e
}

func (e *tokenEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	n := int(e.hits.Add(1))
	e.mu.Lock()
	e.forms = append(e.forms, r.PostForm)
	e.heads = append(e.heads, r.Header.Clone())
	answer := e.answer
	release := e.release
	gated := e.gated
	slow := e.slowness
	e.mu.Unlock()
	if gated {
		e.entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			e.aborted.Add(1)
			return
		}
	}
	if slow > 0 {
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
			return
		}
	}
	rep := answer(n, r.PostForm)
	if rep.status == 0 {
		rep.status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	if rep.stall > 0 {
		w.(http.Flusher).Flush()
		select {
		case <-time.After(rep.stall):
		case <-r.Context().Done():
			return
		}
	}
	_, _ = w.Write([]byte(rep.body))
}

// gate makes later requests wait until open is called.
func (e *tokenEndpoint) gate() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.release = make(chan struct{})
	e.gated = true
}

// open releases every waiting request (idempotent).
func (e *tokenEndpoint) open() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.gated {
		return
	}
	e.gated = false
	close(e.release)
}

func (e *tokenEndpoint) setAnswer(answer func(n int, form url.Values) reply) {
	e.mu.Lock()
	e.answer = answer
	e.mu.Unlock()
}

func (e *tokenEndpoint) slow(d time.Duration) {
	e.mu.Lock()
	e.slowness = d
	e.mu.Unlock()
}

func (e *tokenEndpoint) requests() int { return int(e.hits.Load()) }

// form returns the i-th (0-based) form received.
func (e *tokenEndpoint) form(t testing.TB, i int) url.Values {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if i >= len(e.forms) {
		t.Fatalf("the token endpoint received %d requests, want at least %d", len(e.forms), i+1)
	}
	return e.forms[i]
}

func (e *tokenEndpoint) header(t testing.TB, i int) http.Header {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if i >= len(e.heads) {
		t.Fatalf("the token endpoint received %d requests, want at least %d", len(e.heads), i+1)
	}
	return e.heads[i]
}

// always answers every request the same way.
func always(r reply) func(int, url.Values) reply {
	return func(int, url.Values) reply { return r }
}

// numbered answers "tok-<n>" for the n-th request.
func numbered(extra map[string]any) func(int, url.Values) reply {
	return func(n int, _ url.Values) reply {
		body := map[string]any{"access_token": "tok-" + itoa(n), "token_type": "Bearer", "expires_in": 3600}
		for k, v := range extra {
			if v == nil {
				delete(body, k)
			} else {
				body[k] = v
			}
		}
		return jsonReply(body)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// clock is a settable time source for Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// extWith parses a config with one http server "api" whose oauth block is
// block (token_url defaults to the endpoint's URL).
func extWith(t testing.TB, tokenURL string, block map[string]any) *config.Extensions {
	t.Helper()
	b := map[string]any{"token_url": tokenURL}
	for k, v := range block {
		b[k] = v
	}
	return parse(t, map[string]any{"mcpServers": map[string]any{
		"api": map[string]any{"type": "http", "url": "http://upstream.invalid/mcp", "oauth": b},
	}}, nil)
}

func parse(t testing.TB, doc map[string]any, lookup func(string) (string, bool)) *config.Extensions {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	ext, err := config.Parse(raw, lookup)
	if err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, raw)
	}
	return ext
}

// clientCreds is a valid client_credentials block.
func clientCreds() map[string]any {
	return map[string]any{"client_id": "cid", "client_secret": "csecret"}
}

// logBuffer is a concurrency-safe sink for a text slog.Logger.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// header calls m.Header with a generous safety deadline.
func header(t testing.TB, m *oauth.Manager, server string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return m.Header(ctx, server)
}

func mustHeader(t testing.TB, m *oauth.Manager, server string) string {
	t.Helper()
	h, err := header(t, m, server)
	if err != nil {
		t.Fatalf("Header(%q): %v", server, err)
	}
	return h
}
