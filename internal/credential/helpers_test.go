package credential_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/credential"
	"github.com/antler-mcp/antler/internal/interceptor"
	"github.com/antler-mcp/antler/internal/oauth"
)

// tokenEndpoint is a real local OAuth token endpoint.
type tokenEndpoint struct {
	srv    *httptest.Server
	hits   atomic.Int64
	status int
	token  string
	delay  time.Duration
}

// newTokenEndpoint answers token; opts adjust it before it starts serving.
func newTokenEndpoint(t testing.TB, token string, opts ...func(*tokenEndpoint)) *tokenEndpoint {
	t.Helper()
	e := &tokenEndpoint{token: token, status: http.StatusOK}
	for _, o := range opts {
		o(e)
	}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.hits.Add(1)
		if e.delay > 0 {
			select {
			case <-time.After(e.delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(e.status)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": e.token, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// oauthBlock is a client_credentials block for e.
func (e *tokenEndpoint) oauthBlock(enabled bool) map[string]any {
	return map[string]any{"enabled": enabled, "token_url": e.srv.URL, "client_id": "cid", "client_secret": canaryClientSecret}
}

// env is a fake environment for $VAR lookups.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// parse builds Extensions from doc's "mcpServers" map.
func parse(t testing.TB, servers map[string]any, vars map[string]string) *config.Extensions {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	ext, err := config.Parse(raw, env(vars))
	if err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, raw)
	}
	for _, s := range ext.Servers {
		if s.Problem != nil {
			t.Fatalf("server %s: %v", s.Name, s.Problem)
		}
	}
	return ext
}

// httpServer is an http server entry with extra fields.
func httpServer(fields map[string]any) map[string]any {
	s := map[string]any{"type": "http", "url": "http://upstream.invalid/mcp"}
	maps.Copy(s, fields)
	return s
}

// stdioServer is a stdio server entry with extra fields.
func stdioServer(fields map[string]any) map[string]any {
	s := map[string]any{"type": "stdio", "command": "true"}
	maps.Copy(s, fields)
	return s
}

// call is what one tool call looked like at the transport.
type call struct {
	reached bool
	headers map[string]string
	err     error
	logs    string
}

// recorder is a base handler that records the request's final headers.
type recorder struct {
	reached bool
	headers map[string]string
}

func (r *recorder) handle(_ context.Context, req *interceptor.Request) (json.RawMessage, error) {
	r.reached = true
	r.headers = maps.Clone(req.Headers)
	return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
}

// invoke sends one call to server through the credential chain the way the
// gateway does: HTTP/SSE calls start from the static headers, stdio from none.
func invoke(t testing.TB, ext *config.Extensions, tokens *oauth.Manager, custom []interceptor.Interceptor, server, user string, secrets map[string]string) call {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return invokeCtx(ctx, t, ext, tokens, custom, server, user, secrets)
}

func invokeCtx(ctx context.Context, t testing.TB, ext *config.Extensions, tokens *oauth.Manager, custom []interceptor.Interceptor, server, user string, secrets map[string]string) call {
	t.Helper()
	s, ok := ext.Server(server)
	if !ok {
		t.Fatalf("no server %q", server)
	}
	var logs logBuffer
	chain := credential.Chain(ext, tokens, custom, logs.logger())
	rec := &recorder{}
	req := &interceptor.Request{Server: s, Tool: "echo", ExposedName: server + "_echo", UserID: user, ThreadID: "th-1", Secrets: secrets}
	if s.IsStdio() {
		req.Headers = map[string]string{}
	} else {
		req.Headers = s.Headers.Map()
	}
	raw, err := interceptor.Chain(rec.handle, chain...)(ctx, req)
	if err == nil && string(raw) == "" {
		t.Errorf("a successful call returned no result")
	}
	if err != nil && raw != nil {
		t.Errorf("a failed call returned a result: %s", raw)
	}
	if rec.reached && err != nil {
		t.Errorf("the transport was reached although the call failed: %v", err)
	}
	return call{reached: rec.reached, headers: rec.headers, err: err, logs: logs.String()}
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

// Canary secrets: none may appear in a message or a log line.
const (
	canaryClientSecret = "CANARY-CLIENT-SECRET-2b7e"
	canaryUserCred     = "CANARY-USER-CREDENTIAL-83fa"
	canaryRequest      = "CANARY-REQUEST-SECRET-41c9"
	canaryOther        = "CANARY-OTHER-SECRET-d05a"
)

var canaries = []string{canaryClientSecret, canaryUserCred, canaryRequest, canaryOther}

// checkNoLeak fails if any canary is in c's error or logs.
func checkNoLeak(t testing.TB, c call) {
	t.Helper()
	msg := ""
	if c.err != nil {
		msg = c.err.Error()
	}
	for _, s := range canaries {
		if strings.Contains(msg, s) {
			t.Errorf("the message leaks %s: %q", s, msg)
		}
		if strings.Contains(c.logs, s) {
			t.Errorf("the log leaks %s: %s", s, c.logs)
		}
	}
}

// checkDenied asserts c is a denial with exactly want and never reached the transport.
func checkDenied(t testing.TB, c call, want string) {
	t.Helper()
	d, ok := interceptor.IsDenied(c.err)
	if !ok {
		t.Fatalf("err = %v (headers %v), want a denial", c.err, c.headers)
	}
	if d.Message != want {
		t.Errorf("denial:\n got %q\nwant %q", d.Message, want)
	}
	if c.reached {
		t.Error("a denied call reached the transport")
	}
}

// checkHeaders asserts c reached the transport with exactly want.
func checkHeaders(t testing.TB, c call, want map[string]string) {
	t.Helper()
	if c.err != nil {
		t.Fatalf("call failed: %v", c.err)
	}
	if !c.reached {
		t.Fatal("the call never reached the transport")
	}
	if !maps.Equal(c.headers, want) && !(len(c.headers) == 0 && len(want) == 0) {
		t.Errorf("headers at the transport:\n got %v\nwant %v", c.headers, want)
	}
}
