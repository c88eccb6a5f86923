package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// canary marks every credential value in these tests: none may appear in a
// log line or in any response other than the upstream's own echo of the
// headers it received.
const canary = "CANARY"

// syncBuffer is a log sink shared by concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tokenEndpoint is a real local OAuth token endpoint.
type tokenEndpoint struct {
	*httptest.Server
	requests  atomic.Int64
	expiresIn int
	delay     time.Duration
	fail      bool
}

func newTokenEndpoint(t *testing.T, expiresIn int) *tokenEndpoint {
	te := &tokenEndpoint{expiresIn: expiresIn}
	te.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := te.requests.Add(1)
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("client_secret") == "" {
			http.Error(w, "bad form", 400)
			return
		}
		time.Sleep(te.delay) // a slow token endpoint, as configured
		if te.fail {
			http.Error(w, `{"error":"boom `+canary+`-in-body"}`, 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%s-%d","token_type":"Bearer","expires_in":%d}`, canary, n, te.expiresIn)
	}))
	t.Cleanup(te.Close)
	return te
}

// credAPI is a gateway with API keys over a config, logging into logs.
type credAPI struct {
	*api
	logs      *syncBuffer
	responses *syncBuffer // every response body except whoami echoes
	audit     *syncBuffer // the audit stream
}

func newCredAPI(t *testing.T, doc string, env map[string]string) *credAPI {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	auditBuf := &syncBuffer{}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, Lookup: lookup, Logger: log, Audit: audit.New(auditBuf)})
	t.Cleanup(cache.Close)
	keys := []settings.Key{
		{Key: "k-alice", User: "alice", Role: settings.RoleAgent},
		{Key: "k-bob", User: "bob", Role: settings.RoleAgent},
		{Key: "k-carol", User: "carol", Role: settings.RoleAgent},
		{Key: "k-svc", User: "scheduler", Role: settings.RoleInternal},
		{Key: "k-admin", User: "root", Role: settings.RoleAdmin},
	}
	// TestOAuthSingleFlightAfterExpiry makes 50 calls at once as one user.
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(keys), Logger: log,
		HTTP: gateway.HTTPOptions{MaxCallsPerPrincipal: 64}}).Handler())
	t.Cleanup(srv.Close)
	return &credAPI{api: &api{t: t, url: srv.URL}, logs: logs, responses: &syncBuffer{}, audit: auditBuf}
}

// call posts a tool call as key and returns the result; whoami results are
// decoded to the headers the upstream received.
func (a *credAPI) call(key, tool, body string) (int, map[string]any, map[string]string) {
	a.t.Helper()
	req, _ := http.NewRequest("POST", a.url+"/api/mcp/tools/"+tool+"/call", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var res map[string]any
	if err := json.Unmarshal(data, &res); err != nil {
		a.t.Fatalf("%s: %q", tool, data)
	}
	var headers map[string]string
	if sc, ok := res["structuredContent"].(map[string]any); ok && strings.HasSuffix(tool, "_whoami") {
		headers = map[string]string{}
		if h, ok := sc["headers"].(map[string]any); ok {
			for k, v := range h {
				headers[k] = fmt.Sprint(v)
			}
		}
	} else {
		a.responses.Write(data)
	}
	return resp.StatusCode, res, headers
}

func TestCredentialLayersEndToEnd(t *testing.T) {
	mcpURL := testmcp.StartHTTP(t, "http") + "/mcp"
	tokens := newTokenEndpoint(t, 3600)
	broken := newTokenEndpoint(t, 3600)
	broken.fail = true
	doc := fmt.Sprintf(`{"mcpServers": {
	  "layered": {"type": "http", "url": %[1]q,
	    "headers": {"authorization": "Bearer static-%[3]s", "X-Static": "s"},
	    "oauth": {"token_url": %[2]q, "client_id": "antler", "client_secret": "$OAUTH_SECRET"},
	    "user_auth": {"users": {"alice": "$ALICE_CRED", "bob": "Bearer bob-%[3]s", "badnl": "$BAD_CRED"}},
	    "headers_from_context": {"headers": {"Authorization": "req_token"}, "on_missing": "passthrough"}},
	  "pass": {"type": "http", "url": %[1]q, "headers": {"X-Static": "kept"},
	    "user_auth": {"users": {}, "on_missing": "passthrough"}},
	  "ctx": {"type": "http", "url": %[1]q, "headers_from_context": {"headers": {"X-Tenant-Token": "tenant", "X-Region": "region"}}},
	  "badstatic": {"type": "http", "url": %[1]q, "headers": {"X-Bad": "$BAD_CRED"}},
	  "local": {"command": %[6]q, "oauth": {"token_url": %[2]q, "client_id": "antler", "client_secret": "$OAUTH_SECRET"}},
	  "badtoken": {"type": "sse", "url": %[4]q,
	    "oauth": {"token_url": %[5]q, "client_id": "antler", "client_secret": "secret-%[3]s"}}
	}}`, mcpURL, tokens.URL, canary, testmcp.StartHTTP(t, "sse")+"/sse", broken.URL, testmcp.Build(t))
	a := newCredAPI(t, doc, map[string]string{
		"OAUTH_SECRET": "oauth-secret-" + canary,
		"ALICE_CRED":   "Bearer alice-" + canary,
		"BAD_CRED":     "Bearer bad-" + canary + "\n",
	})

	// Discovery used the initial OAuth header: one token request already.
	if code, _ := a.as("k-admin").do("GET", "/api/mcp/servers", ""); code != 200 {
		t.Fatal(code)
	}
	if n := tokens.requests.Load(); n != 1 {
		t.Errorf("token requests after discovery = %d, want 1", n)
	}

	t.Run("each user gets their own credential", func(t *testing.T) {
		_, _, h := a.call("k-alice", "layered_whoami", `{}`)
		if h["authorization"] != "Bearer alice-"+canary {
			t.Errorf("alice sent %q", h["authorization"])
		}
		_, _, h = a.call("k-bob", "layered_whoami", `{}`)
		if h["authorization"] != "Bearer bob-"+canary {
			t.Errorf("bob sent %q", h["authorization"])
		}
		if h["x-static"] != "s" {
			t.Errorf("static header lost: %v", h)
		}
	})

	t.Run("per-request value wins over every layer, sent once", func(t *testing.T) {
		_, _, h := a.call("k-alice", "layered_whoami", `{"secrets": {"req_token": "Bearer per-request-`+canary+`"}}`)
		if got := h["authorization"]; got != "Bearer per-request-"+canary {
			t.Errorf("authorization %q, want the per-request value exactly once", got)
		}
	})

	t.Run("stdio servers get the chain's headers as _meta.headers", func(t *testing.T) {
		_, res, _ := a.call("k-alice", "local_whoami", `{}`)
		meta, _ := res["structuredContent"].(map[string]any)["meta"].(map[string]any)
		hdrs, _ := meta["headers"].(map[string]any)
		if auth, _ := hdrs["Authorization"].(string); !strings.HasPrefix(auth, "Bearer tok-") {
			t.Errorf("_meta %v, want headers.Authorization from OAuth", meta)
		}
	})

	t.Run("unmapped user is denied with DeerFlow's message", func(t *testing.T) {
		code, res, _ := a.call("k-carol", "layered_whoami", `{}`)
		want := "No credential is configured for your account (user id 'carol') on MCP server 'layered'. Ask the operator to add this exact id to that server's user_auth.users map (or set its environment variable)."
		if code != 200 || res["isError"] != true || text(res) != want {
			t.Errorf("%d %v", code, res)
		}
	})

	t.Run("illegal per-user credential is always denied without echo", func(t *testing.T) {
		code, res, _ := a.call("k-svc", "layered_whoami", `{"user_id": "badnl"}`)
		if code != 200 || res["isError"] != true || !strings.Contains(text(res), "(user id 'badnl')") || !strings.Contains(text(res), "line break") {
			t.Errorf("%d %v", code, res)
		}
	})

	t.Run("passthrough keeps the static header", func(t *testing.T) {
		_, _, h := a.call("k-carol", "pass_whoami", `{}`)
		if h["x-static"] != "kept" || h["authorization"] != "" {
			t.Errorf("headers %v", h)
		}
	})

	t.Run("only internal principals name a user", func(t *testing.T) {
		_, _, h := a.call("k-svc", "layered_whoami", `{"user_id": "bob"}`)
		if h["authorization"] != "Bearer bob-"+canary {
			t.Errorf("internal acting for bob sent %q", h["authorization"])
		}
		_, _, h = a.call("k-alice", "layered_whoami", `{"user_id": "bob"}`)
		if h["authorization"] != "Bearer alice-"+canary {
			t.Errorf("agent alice borrowed bob's credential: %q", h["authorization"])
		}
		if !strings.Contains(a.logs.String(), "ignoring user_id from a principal that is not internal") {
			t.Error("the ignored user_id was not logged")
		}
	})

	t.Run("per-request credentials: missing and illegal fail closed", func(t *testing.T) {
		_, res, _ := a.call("k-alice", "ctx_whoami", `{"secrets": {"region": "eu"}}`)
		if want := "MCP server 'ctx' needs request-scoped credential(s) tenant. Send them in config.context.secrets, or set this server's headers_from_context.on_missing to 'passthrough'."; text(res) != want {
			t.Errorf("missing: %v", res)
		}
		if !strings.Contains(a.audit.String(), `"by":"credential","event":"call.denied","message":"MCP server 'ctx' needs request-scoped credential(s) tenant.`) ||
			!strings.Contains(a.audit.String(), `"server":"ctx","thread":"","time":`) || !strings.Contains(a.audit.String(), `"tool":"whoami","user":"alice"`) {
			t.Errorf("the denial is not in the audit log:\n%s", a.audit.String())
		}
		_, res, _ = a.call("k-alice", "ctx_whoami", `{"secrets": {"region": "eu", "tenant": "t-`+canary+`\r\nX-Injected: 1"}}`)
		if want := "MCP server 'ctx' cannot send request-scoped credential(s) as HTTP header values: 'tenant' contains a line break or another forbidden control character. Fix the value passed in config.context.secrets; a stray newline picked up when reading a token from a file is the usual cause."; text(res) != want {
			t.Errorf("illegal: %v", res)
		}
		if strings.Contains(a.audit.String(), canary) {
			t.Errorf("the audit log holds the secret:\n%s", a.audit.String())
		}
		_, _, h := a.call("k-alice", "ctx_whoami", `{"secrets": {"region": "eu", "tenant": "t-`+canary+`"}}`)
		if h["x-tenant-token"] != "t-"+canary || h["x-region"] != "eu" {
			t.Errorf("headers %v", h)
		}
	})

	t.Run("a failing token endpoint fails only that server's calls", func(t *testing.T) {
		code, res, _ := a.call("k-alice", "badtoken_echo", `{"arguments": {"message": "x"}}`)
		if code != 200 || res["isError"] != true || !strings.Contains(text(res), "answered HTTP 500") {
			t.Errorf("%d %v", code, res)
		}
		_, st := a.as("k-admin").do("GET", "/api/mcp/servers", "")
		a.responses.Write([]byte(fmt.Sprint(st)))
		for _, s := range st["servers"].([]any) {
			m := s.(map[string]any)
			if m["name"] == "badstatic" {
				continue
			}
			if m["state"] != "connected" {
				t.Errorf("server %v not connected: a token failure at discovery must skip only the header", m)
			}
		}
	})

	t.Run("a static header that cannot be sent drops only that server", func(t *testing.T) {
		_, st := a.as("k-admin").do("GET", "/api/mcp/servers", "")
		for _, s := range st["servers"].([]any) {
			m := s.(map[string]any)
			if m["name"] != "badstatic" {
				continue
			}
			want := "mcpServers.badstatic.headers.X-Bad: MCP server 'badstatic' has a header 'X-Bad' that cannot be sent as an HTTP header value: it contains a line break or another forbidden control character"
			if m["state"] != "failed" || m["error"] != want {
				t.Errorf("badstatic: %v", m)
			}
		}
	})

	// Every list and status response, every non-echo result and every log
	// line at debug level: no credential value anywhere.
	for _, path := range []string{"/api/mcp/tools", "/api/mcp/servers", "/api/mcp/routing-hints"} {
		_, body := a.as("k-admin").do("GET", path, "")
		b, _ := json.Marshal(body)
		a.responses.Write(b)
	}
	if i := strings.Index(a.responses.String(), canary); i >= 0 {
		t.Errorf("a credential reached a response: …%s…", excerpt(a.responses.String(), i))
	}
	if i := strings.Index(a.logs.String(), canary); i >= 0 {
		t.Errorf("a credential reached a log line: …%s…", excerpt(a.logs.String(), i))
	}
}

func excerpt(s string, i int) string {
	return s[max(0, i-120):min(len(s), i+40)]
}

func TestOAuthSingleFlightAfterExpiry(t *testing.T) {
	mcpURL := testmcp.StartHTTP(t, "http") + "/mcp"
	tokens := newTokenEndpoint(t, 1)
	a := newCredAPI(t, fmt.Sprintf(`{"mcpServers": {"o": {"type": "http", "url": %q,
		"oauth": {"token_url": %q, "client_id": "c", "client_secret": "s", "refresh_skew_seconds": 0}}}}`, mcpURL, tokens.URL), nil)
	_, _, h := a.call("k-alice", "o_whoami", `{}`)
	if !strings.HasPrefix(h["authorization"], "Bearer tok-") {
		t.Fatalf("authorization %q", h["authorization"])
	}
	// Kept: the token's 1 s lifetime running out on the wall clock is what
	// this test is about, and nothing but time makes it expire.
	time.Sleep(1100 * time.Millisecond)
	before := tokens.requests.Load()
	tokens.delay = 200 * time.Millisecond
	var wg sync.WaitGroup
	auths := make([]string, 50)
	for i := range 50 {
		wg.Go(func() {
			_, _, h := a.call("k-alice", "o_whoami", `{}`)
			auths[i] = h["authorization"]
		})
	}
	wg.Wait()
	if n := tokens.requests.Load() - before; n != 1 {
		t.Errorf("50 concurrent calls after expiry made %d token requests, want 1", n)
	}
	for _, got := range auths {
		if got != auths[0] || got == h["authorization"] {
			t.Fatalf("calls sent %q and %q; want all the one new token", got, auths[0])
		}
	}
}
