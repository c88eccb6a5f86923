package gateway_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/workspace"
)

// api is a gateway over a config file, served on loopback.
type api struct {
	t   *testing.T
	url string
	key string
}

func newAPI(t *testing.T, doc string, keys ...settings.Key) *api {
	t.Helper()
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path})
	t.Cleanup(cache.Close)
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(keys)}).Handler())
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL}
}

func (a *api) as(key string) *api { c := *a; c.key = key; return &c }

func (a *api) do(method, path, body string) (int, map[string]any) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		a.t.Fatalf("%s %s: status %d, body %q is not a JSON object", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

func text(res map[string]any) string {
	var b strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			fmt.Fprint(&b, m["text"])
		}
	}
	return b.String()
}

func demoDoc(t *testing.T) string {
	bin := testmcp.Build(t)
	httpURL := testmcp.StartHTTP(t, "http")
	sseURL := testmcp.StartHTTP(t, "sse")
	return fmt.Sprintf(`{"mcpServers": {
		"stdio": {"command": %q, "tool_call_timeout": 0.5},
		"http": {"type": "http", "url": %q, "tool_call_timeout": 0.5},
		"sse": {"type": "sse", "url": %q, "tool_call_timeout": 0.5}
	}}`, bin, httpURL+"/mcp", sseURL+"/sse")
}

func TestDemoServerOverEveryTransport(t *testing.T) {
	a := newAPI(t, demoDoc(t))
	code, list := a.do("GET", "/api/mcp/tools", "")
	if code != 200 {
		t.Fatalf("tools: %d %v", code, list)
	}
	if n := len(list["tools"].([]any)); n != 24 {
		t.Fatalf("%d tools, want 24 (8 per transport)", n)
	}
	for _, server := range []string{"stdio", "http", "sse"} {
		t.Run(server, func(t *testing.T) {
			code, res := a.do("POST", "/api/mcp/tools/"+server+"_echo/call", `{"arguments":{"message":"hi"},"thread_id":"t1"}`)
			if code != 200 || text(res) != "Echo: hi" || res["isError"] == true {
				t.Errorf("echo: %d %v", code, res)
			}
			_, res = a.do("POST", "/api/mcp/tools/"+server+"_add/call", `{"arguments":{"a":1.5,"b":2}}`)
			if sc, _ := res["structuredContent"].(map[string]any); sc["sum"] != 3.5 {
				t.Errorf("add: structuredContent %v", res["structuredContent"])
			}
			code, res = a.do("POST", "/api/mcp/tools/"+server+"_fail/call", `{"arguments":{"message":"nope"}}`)
			if code != 200 || res["isError"] != true || text(res) != "nope" {
				t.Errorf("fail: %d %v, want the upstream's isError result passed through", code, res)
			}
			code, res = a.do("POST", "/api/mcp/tools/"+server+"_sleep/call", `{"arguments":{"ms":3000}}`)
			if code != 200 || res["isError"] != true || !strings.Contains(text(res), "timed out") {
				t.Errorf("sleep past tool_call_timeout: %d %v", code, res)
			}
			if code, res = a.do("POST", "/api/mcp/tools/"+server+"_echo/call", `{"arguments":{"message":"again"}}`); text(res) != "Echo: again" {
				t.Errorf("call after a timeout: %d %v", code, res)
			}
		})
	}
	code, st := a.do("GET", "/api/mcp/servers", "")
	servers, _ := st["servers"].([]any)
	if code != 200 || len(servers) != 3 {
		t.Fatalf("servers: %d %v", code, st)
	}
	for _, s := range servers {
		m := s.(map[string]any)
		if m["state"] != "connected" || m["protocol_version"] == "" || m["tools"] != 8.0 {
			t.Errorf("server status %v", m)
		}
	}
}

func TestCallRequestErrors(t *testing.T) {
	a := newAPI(t, fmt.Sprintf(`{"mcpServers": {"d": {"command": %q}}}`, testmcp.Build(t)))
	for _, tc := range []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"unknown tool", "/api/mcp/tools/d_nope/call", `{}`, 404, "unknown tool"},
		{"not JSON", "/api/mcp/tools/d_echo/call", `{"arguments":`, 400, "JSON"},
		{"arguments not an object", "/api/mcp/tools/d_echo/call", `{"arguments":[1]}`, 400, "arguments"},
		{"typo field", "/api/mcp/tools/d_echo/call", `{"args":{}}`, 400, `"args"`},
		{"secret not a string", "/api/mcp/tools/d_echo/call", `{"secrets":{"k":1}}`, 400, "secrets.k"},
		{"thread traversal", "/api/mcp/tools/d_echo/call", `{"thread_id":"../x"}`, 400, "thread_id"},
		{"array body", "/api/mcp/tools/d_echo/call", `[]`, 400, "JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, res := a.do("POST", tc.path, tc.body)
			if code != tc.code || !strings.Contains(fmt.Sprint(res["error"]), tc.want) {
				t.Errorf("%d %v, want %d with %q", code, res, tc.code, tc.want)
			}
		})
	}
	// An empty body is a call without arguments.
	if code, res := a.do("POST", "/api/mcp/tools/d_whoami/call", ""); code != 200 || res["isError"] == true {
		t.Errorf("empty body: %d %v", code, res)
	}
}

func TestPrincipalsAndRoles(t *testing.T) {
	a := newAPI(t, `{"mcpServers": {}}`,
		settings.Key{Key: "admin-key", User: "root", Role: settings.RoleAdmin},
		settings.Key{Key: "agent-key", User: "alice", Role: settings.RoleAgent})
	if code, res := a.do("GET", "/api/mcp/tools", ""); code != 401 || !strings.Contains(fmt.Sprint(res["error"]), "API key") {
		t.Errorf("no key: %d %v", code, res)
	}
	if code, _ := a.as("wrong").do("GET", "/api/mcp/tools", ""); code != 401 {
		t.Errorf("wrong key: %d", code)
	}
	if code, _ := a.as("agent-key").do("GET", "/api/mcp/tools", ""); code != 200 {
		t.Errorf("agent lists tools: %d", code)
	}
	if code, res := a.as("agent-key").do("POST", "/api/mcp/cache/reset", ""); code != 403 || res["error"] != "Admin privileges required to manage MCP configuration." {
		t.Errorf("agent resets cache: %d, want 403", code)
	}
	if code, res := a.as("admin-key").do("POST", "/api/mcp/cache/reset", ""); code != 200 || res["reset"] != true || res["success"] != true || res["message"] != "MCP tools cache reset. Tools will reload on next use." {
		t.Errorf("admin resets cache: %d %v", code, res)
	}
	if code, res := a.do("GET", "/healthz", ""); code != 200 || res["status"] != "ok" {
		t.Errorf("healthz needs no key: %d %v", code, res)
	}
}

func TestNoKeysServesLoopbackOnly(t *testing.T) {
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{}`)})
	defer cache.Close()
	h := testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler()
	req := httptest.NewRequest("GET", "http://127.0.0.1:8080/api/mcp/tools", nil)
	req.RemoteAddr = "192.0.2.10:4000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), "loopback callers only") {
		t.Errorf("remote caller without keys: %d %s, want 403 for the peer", rec.Code, rec.Body)
	}
	req.RemoteAddr = "127.0.0.1:4000"
	req.Header.Set("X-Forwarded-For", "127.0.0.1")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("loopback caller: %d %s", rec.Code, rec.Body)
	}
	req = httptest.NewRequest("GET", "http://127.0.0.1:8080/api/mcp/tools", nil)
	req.RemoteAddr = "192.0.2.10:4000"
	req.Header.Set("X-Forwarded-For", "127.0.0.1") // never trusted
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), "loopback callers only") {
		t.Errorf("spoofed X-Forwarded-For: %d %s, want 403 for the peer", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		peer string
		code int
	}{
		{"[::1]:4000", 200},
		{"[::ffff:127.0.0.1]:4000", 200},
		{"[::ffff:192.0.2.10]:4000", 403},
		{"[2001:db8::1]:4000", 403},
		{"[fe80::1%eth0]:4000", 403},
		{"not-an-address", 403},
	} {
		req = httptest.NewRequest("GET", "http://127.0.0.1:8080/api/mcp/tools", nil)
		req.RemoteAddr = tc.peer
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("peer %s: %d %s, want %d", tc.peer, rec.Code, rec.Body, tc.code)
		}
	}
}

func TestCheckListen(t *testing.T) {
	open := principal.New(nil)
	keyed := principal.New([]settings.Key{{Key: "k", User: "u", Role: "agent"}})
	for _, tc := range []struct {
		addr string
		auth *principal.Authenticator
		ok   bool
	}{
		{"127.0.0.1:8080", open, true},
		{"[::1]:8080", open, true},
		{"localhost:8080", open, true},
		{"0.0.0.0:8080", open, false},
		{":8080", open, false},
		{"10.1.2.3:8080", open, false},
		{"0.0.0.0:8080", keyed, true},
	} {
		err := gateway.CheckListen(tc.addr, tc.auth)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, keys=%v) = %v", tc.addr, !tc.auth.Open(), err)
		}
		if err != nil && !strings.Contains(err.Error(), "API keys") {
			t.Errorf("message %q does not say why", err)
		}
	}
}

func TestRoutingHintsEndpoint(t *testing.T) {
	bin := testmcp.Build(t)
	a := newAPI(t, fmt.Sprintf(`{"mcpServers": {"d": {"command": %q,
		"routing": {"mode": "prefer", "priority": 10, "keywords": ["greeting"]},
		"tools": {"add": {"routing": {"priority": 90, "keywords": ["sum <b>"]}}, "echo": {"routing": {"mode": "off"}}}}}}`, bin))
	code, res := a.do("GET", "/api/mcp/routing-hints?deferred=d_add", "")
	if code != 200 {
		t.Fatalf("%d %v", code, res)
	}
	section := res["section"].(string)
	if !strings.HasPrefix(section, "<mcp_routing_hints>\nWhen the user's request involves sum &lt;b&gt;:\n  use `tool_search` to fetch `d_add`, then prefer that MCP tool.\nWhen the user's request involves greeting:\n") {
		t.Errorf("section:\n%s", section)
	}
	if strings.Contains(section, "d_echo") {
		t.Error("a tool with mode off got a hint")
	}
	_, tools := a.do("GET", "/api/mcp/tools", "")
	for _, tool := range tools["tools"].([]any) {
		m := tool.(map[string]any)
		if m["name"] == "d_add" {
			r := m["routing"].(map[string]any)
			if r["priority"] != 90.0 || r["mode"] != "prefer" {
				t.Errorf("d_add routing %v", r)
			}
		}
		if m["name"] == "d_echo" && m["routing"] != nil {
			t.Errorf("d_echo has routing %v", m["routing"])
		}
	}
}

func writeTemp(t testing.TB, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func FuzzParseCallRequest(f *testing.F) {
	for _, seed := range []string{``, `{}`, `{"arguments":{"a":1},"thread_id":"t1","secrets":{"k":"v"},"user_id":"u"}`,
		`{"arguments":null}`, `[]`, `{"secrets":{"k":1}}`, `{"thread_id":"../../etc"}`, `{"x":1}`, `{"arguments":{}} trailing`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := gateway.ParseCallRequest(body)
		if err != nil {
			var bad *gateway.BadRequest
			if !errors.As(err, &bad) {
				t.Fatalf("error %v is not a BadRequest", err)
			}
			return
		}
		if !json.Valid(req.Arguments) || !bytes.HasPrefix(bytes.TrimSpace(req.Arguments), []byte("{")) {
			t.Fatalf("accepted arguments %q that are not a JSON object", req.Arguments)
		}
		for _, id := range []string{req.ThreadID, req.UserID} {
			if id != "" && workspace.CheckID(id) != nil {
				t.Fatalf("accepted invalid id %q", id)
			}
		}
	})
}

func TestTaskEndpointsWithoutTheRuntime(t *testing.T) {
	a := newAPI(t, `{"mcpServers": {}}`)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/threads/t1/mcp-tasks"},
		{"GET", "/api/threads/t1/mcp-tasks/mcp-task-1"},
		{"POST", "/api/threads/t1/mcp-tasks/mcp-task-1/cancel"},
	} {
		if code, res := a.do(tc.method, tc.path, ""); code != 503 || res["error"] != "MCP task service not available" {
			t.Errorf("%s %s: %d %v, want 503: a cancel is never acknowledged without a worker", tc.method, tc.path, code, res)
		}
	}
	_, tools := a.do("GET", "/api/mcp/tools", "")
	if strings.Contains(fmt.Sprint(tools), "list_background_tasks") {
		t.Error("task host tools listed while the runtime is off")
	}
}
