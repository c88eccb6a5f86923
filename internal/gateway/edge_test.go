package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/slowclient"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// serveEdge runs gw through Serve on a real loopback listener, so the
// server-wide timeouts and the connection cap apply, and returns its
// address (host:port).
func serveEdge(t *testing.T, gw *gateway.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, ln, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// serveKeyed serves a gateway over an empty config with keys and the edge
// options o, and returns its address.
func serveKeyed(t *testing.T, keys []settings.Key, o gateway.HTTPOptions) string {
	t.Helper()
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{"mcpServers": {}}`)})
	t.Cleanup(cache.Close)
	return serveEdge(t, testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(keys), HTTP: o}))
}

// edgeRequest is one request as a browser page or a client would send it.
type edgeRequest struct {
	method, path, body string
	host               string // Host header; "" is the address dialled
	origin             string
	contentType        string
	key                string
	header             map[string]string
}

func sendEdge(t *testing.T, addr string, r edgeRequest) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, "http://"+addr+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.host != "" {
		req.Host = r.host
	}
	for k, v := range map[string]string{"Origin": r.origin, "Content-Type": r.contentType} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// A key-less loopback host is what a web page in the user's browser can
// reach. Each attack below is what such a page (or a DNS-rebinding name
// resolving to 127.0.0.1) can send; none may call the tool or change the
// config file, while the same requests sent as a client sends them work.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeTemp(t, fmt.Sprintf(`{"mcpServers": {"d": {"command": %q}}}`, testmcp.Build(t)))
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	addr := serveEdge(t, testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)}))
	_, port, _ := net.SplitHostPort(addr)
	before, _ := os.ReadFile(cfg)

	writeCall := func(canary string) string {
		return fmt.Sprintf(`{"arguments": {"path": %q, "content": "pwned"}}`, filepath.Join(dir, canary))
	}
	addServer := `{"mcp_servers": {"evil": {"command": "npx", "args": ["-y", "evil-package"]}}}`
	const call = "/api/mcp/tools/d_write_file/call"
	for _, tc := range []struct {
		name   string
		req    edgeRequest
		canary string
		code   int
		want   string
	}{
		{"text/plain tool call (a simple request)", edgeRequest{method: "POST", path: call, body: writeCall("plain"), contentType: "text/plain"}, "plain", 415, "application/json"},
		{"form tool call", edgeRequest{method: "POST", path: call, body: writeCall("form"), contentType: "application/x-www-form-urlencoded"}, "form", 415, "application/json"},
		{"multipart tool call", edgeRequest{method: "POST", path: call, body: writeCall("multi"), contentType: "multipart/form-data; boundary=x"}, "multi", 415, "application/json"},
		{"tool call without Content-Type", edgeRequest{method: "POST", path: call, body: writeCall("none")}, "none", 415, "application/json"},
		{"text/plain add server", edgeRequest{method: "POST", path: "/api/mcp/config/servers", body: addServer, contentType: "text/plain"}, "", 415, "application/json"},
		{"text/plain whole-set PUT", edgeRequest{method: "PUT", path: "/api/mcp/config", body: addServer, contentType: "text/plain;charset=UTF-8"}, "", 415, "application/json"},
		{"body-less cache reset without Content-Type", edgeRequest{method: "POST", path: "/api/mcp/cache/reset"}, "", 415, "without a body"},
		{"body-less DELETE without Content-Type", edgeRequest{method: "DELETE", path: "/api/mcp/config/servers/d"}, "", 415, "without a body"},
		{"GET with a text/plain body", edgeRequest{method: "GET", path: "/api/mcp/tools", body: "x", contentType: "text/plain"}, "", 415, "application/json"},
		{"DNS rebinding: Host evil.example", edgeRequest{method: "POST", path: call, body: writeCall("rebind"), contentType: "application/json", host: "evil.example:" + port}, "rebind", 403, "allowed_hosts"},
		{"DNS rebinding without a port", edgeRequest{method: "GET", path: "/api/mcp/tools", host: "evil.example"}, "", 403, "allowed_hosts"},
		{"non-loopback IP Host without keys", edgeRequest{method: "GET", path: "/api/mcp/tools", host: "192.0.2.7:" + port}, "", 403, "allowed_hosts"},
		{"Origin evil.example", edgeRequest{method: "POST", path: call, body: writeCall("origin"), contentType: "application/json", origin: "http://evil.example"}, "origin", 403, "allowed_origins"},
		{"Origin null (sandboxed frame)", edgeRequest{method: "POST", path: "/api/mcp/config/servers", body: addServer, contentType: "application/json", origin: "null"}, "", 403, "allowed_origins"},
		{"Origin of the host itself is still a page", edgeRequest{method: "GET", path: "/api/mcp/tools", origin: "http://127.0.0.1:" + port}, "", 403, "allowed_origins"},
		{"no-cors GET from another page (an <img>): event stream", edgeRequest{method: "GET", path: "/api/threads/t1/mcp-tasks/events", header: map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}}, "", 403, "Sec-Fetch-Site"},
		{"no-cors GET from another port of localhost (same-site)", edgeRequest{method: "GET", path: "/api/mcp/tools", header: map[string]string{"Sec-Fetch-Site": "same-site"}}, "", 403, "Sec-Fetch-Site"},
		{"Origin of the host with Sec-Fetch-Site same-site", edgeRequest{method: "POST", path: call, body: writeCall("samesite"), contentType: "application/json", origin: "http://127.0.0.1:" + port, header: map[string]string{"Sec-Fetch-Site": "same-site"}}, "samesite", 403, "allowed_origins"},
		{"another port of localhost claiming same-origin", edgeRequest{method: "POST", path: call, body: writeCall("port"), contentType: "application/json", origin: "http://127.0.0.1:1", header: map[string]string{"Sec-Fetch-Site": "same-origin"}}, "port", 403, "allowed_origins"},
		{"preflight from evil.example", edgeRequest{method: "OPTIONS", path: call, origin: "http://evil.example", header: map[string]string{"Access-Control-Request-Method": "POST"}}, "", 403, "allowed_origins"},

		{"a client's JSON call", edgeRequest{method: "POST", path: "/api/mcp/tools/d_echo/call", body: `{"arguments":{"message":"hi"}}`, contentType: "application/json; charset=utf-8"}, "", 200, "Echo: hi"},
		{"Host localhost with its port", edgeRequest{method: "GET", path: "/api/mcp/tools", host: "localhost:" + port}, "", 200, "d_echo"},
		{"Host [::1]", edgeRequest{method: "GET", path: "/api/mcp/tools", host: "[::1]:" + port}, "", 200, "d_echo"},
		{"body-less cache reset as JSON", edgeRequest{method: "POST", path: "/api/mcp/cache/reset", contentType: "application/json"}, "", 200, "cache reset"},
		{"healthz", edgeRequest{method: "GET", path: "/healthz"}, "", 200, "ok"},
		{"the host's own page (the dashboard's fetch)", edgeRequest{method: "POST", path: "/api/mcp/tools/d_echo/call", body: `{"arguments":{"message":"ui"}}`, contentType: "application/json", origin: "http://127.0.0.1:" + port, header: map[string]string{"Sec-Fetch-Site": "same-origin"}}, "", 200, "Echo: ui"},
		{"the host's own page under localhost", edgeRequest{method: "POST", path: "/api/mcp/cache/reset", contentType: "application/json", host: "localhost:" + port, origin: "http://localhost:" + port, header: map[string]string{"Sec-Fetch-Site": "same-origin"}}, "", 200, "cache reset"},
		{"a typed-in address (Sec-Fetch-Site none)", edgeRequest{method: "GET", path: "/api/mcp/tools", header: map[string]string{"Sec-Fetch-Site": "none"}}, "", 200, "d_echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := sendEdge(t, addr, tc.req)
			if resp.StatusCode != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s, want %d containing %q", resp.StatusCode, body, tc.code, tc.want)
			}
			if tc.code != 200 && !strings.HasPrefix(body, `{"error":`) {
				t.Errorf("refusal %q is not the {\"error\": ...} shape", body)
			}
			if tc.canary != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.canary)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the refused call ran the tool: %v", err)
				}
			}
		})
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Errorf("a refused request changed the config file:\n%s", after)
	}
	// The same write sent as a client sends it runs.
	resp, body := sendEdge(t, addr, edgeRequest{method: "POST", path: call, body: writeCall("legit"), contentType: "application/json"})
	if b, err := os.ReadFile(filepath.Join(dir, "legit")); resp.StatusCode != 200 || err != nil || string(b) != "pwned" {
		t.Errorf("legitimate write: %d %s, file %q %v", resp.StatusCode, body, b, err)
	}
}

// With keys, allowed_hosts and allowed_origins open the host to the names
// and pages the operator lists, and to IP literals; nothing else.
func TestAllowedHostsAndOrigins(t *testing.T) {
	t.Parallel()
	addr := serveKeyed(t, []settings.Key{{Key: "k-alice", User: "alice", Role: settings.RoleAgent}}, gateway.HTTPOptions{
		AllowedHosts: []string{"antler.internal", "*.corp.example:8443"}, AllowedOrigins: []string{"https://App.Example.com:443"}})
	get := func(host, origin string) edgeRequest {
		return edgeRequest{method: "GET", path: "/api/mcp/tools", host: host, origin: origin, key: "k-alice"}
	}
	for _, tc := range []struct {
		name string
		req  edgeRequest
		code int
		cors string // Access-Control-Allow-Origin wanted
	}{
		{"allowed origin", get("", "https://app.example.com"), 200, "https://app.example.com"},
		{"allowed origin's preflight", edgeRequest{method: "OPTIONS", path: "/api/mcp/tools/x/call", origin: "https://app.example.com",
			header: map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}}, 204, "https://app.example.com"},
		{"allowed origin, marked cross-site", edgeRequest{method: "GET", path: "/api/mcp/tools", origin: "https://app.example.com", key: "k-alice",
			header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 200, "https://app.example.com"},
		{"other origin", get("", "http://evil.example"), 403, ""},
		{"allowed origin over http", get("", "http://app.example.com"), 403, ""},
		{"listed host", get("antler.internal:9000", ""), 200, ""},
		{"listed subdomain on its port", get("a.corp.example:8443", ""), 200, ""},
		{"listed subdomain on another port", get("a.corp.example:80", ""), 403, ""},
		{"the wildcard's own name", get("corp.example:8443", ""), 403, ""},
		{"IP literal with keys", get("192.0.2.7:8080", ""), 200, ""},
		{"unlisted name", get("evil.example", ""), 403, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := sendEdge(t, addr, tc.req)
			if resp.StatusCode != tc.code {
				t.Errorf("%d %s, want %d", resp.StatusCode, body, tc.code)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.cors {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.cors)
			}
		})
	}
}

// The host's own page (the dashboard) may send its Origin without a listing
// only under a Host that no rebinding page can take: with allowed_hosts "*",
// a rebinding page at evil.example is the same origin as the host under that
// name and is refused, while a listed name's own page is served.
func TestOwnPageOriginUnderWildcardHosts(t *testing.T) {
	t.Parallel()
	addr := serveKeyed(t, []settings.Key{{Key: "k-admin", User: "root", Role: settings.RoleAdmin}}, gateway.HTTPOptions{
		AllowedHosts: []string{"*", "antler.internal"}})
	_, port, _ := net.SplitHostPort(addr)
	reset := func(host string) edgeRequest {
		return edgeRequest{method: "POST", path: "/api/mcp/cache/reset", contentType: "application/json", key: "k-admin",
			host: host + ":" + port, origin: "http://" + host + ":" + port, header: map[string]string{"Sec-Fetch-Site": "same-origin"}}
	}
	for _, tc := range []struct {
		name string
		req  edgeRequest
		code int
	}{
		{"rebinding page under *", reset("evil.example"), 403},
		{"own page under a listed name", reset("antler.internal"), 200},
		{"own page under an IP literal", reset("127.0.0.1"), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp, body := sendEdge(t, addr, tc.req); resp.StatusCode != tc.code {
				t.Errorf("%d %s, want %d", resp.StatusCode, body, tc.code)
			}
		})
	}
}

// A client that sends its headers or its body a byte at a time is cut off
// after the header or body timeout, also when its request is refused; a
// client that sends promptly is served.
func TestSlowClientsAreDisconnected(t *testing.T) {
	t.Parallel()
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{"mcpServers": {}}`)})
	t.Cleanup(cache.Close)
	addr := serveEdge(t, testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil), HTTP: gateway.HTTPOptions{
		ReadHeaderTimeout: 300 * time.Millisecond, BodyReadTimeout: 300 * time.Millisecond}}))
	for _, tc := range []struct {
		name, prefix string
		filler       byte
		answer       string // the status line before the close, "" for none
	}{
		{"headers byte by byte", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", 'a', ""},
		{"body byte by byte", "POST /api/mcp/cache/reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n\"", 'a', "HTTP/1.1 408"},
		// A refusal's body is read (and dropped) by net/http before the
		// answer: under the same deadline.
		{"refused body byte by byte", "POST /api/mcp/cache/reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n", 'a', "HTTP/1.1 415"},
		{"unknown host, body byte by byte", "POST /api/mcp/cache/reset HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", 'a', "HTTP/1.1 403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := slowclient.Run(addr, tc.prefix, tc.filler, 30*time.Second)
			if err != nil {
				t.Fatalf("%v (read %q)", err, got)
			}
			if !strings.HasPrefix(string(got), tc.answer) {
				t.Errorf("answer before the close %q, want %q", got, tc.answer)
			}
		})
	}
	resp, body := sendEdge(t, addr, edgeRequest{method: "GET", path: "/healthz"})
	if resp.StatusCode != 200 {
		t.Errorf("a prompt client: %d %s", resp.StatusCode, body)
	}
}

// A call that outlasts http.body_read_timeout, on a kept-alive connection,
// is answered on both doors: the body's deadline bounds the body only, not
// the call, nor the next request's (the connection's read deadline is
// given to it only when a read waits, and lifted after the body).
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	t.Parallel()
	bin := testmcp.Build(t)
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}}`, bin)), DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	addr := serveEdge(t, testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil), HTTP: gateway.HTTPOptions{
		BodyReadTimeout: 100 * time.Millisecond}}))
	// Two calls on one connection (http.DefaultClient keeps it alive), each
	// sleeping past the body's deadline.
	for i := range 2 {
		resp, body := sendEdge(t, addr, edgeRequest{method: "POST", path: "/api/mcp/tools/demo_sleep/call",
			contentType: "application/json", body: `{"arguments":{"ms":400}}`})
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "slept 400ms") {
			t.Errorf("REST call %d: %d %s", i, resp.StatusCode, body)
		}
	}
	c := mcpClient(t, "http://"+addr, "2025-11-25")
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "demo_sleep", Arguments: map[string]any{"ms": 400}}})
	if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(fmt.Sprint(res.Content[0]), "slept 400ms") {
		t.Errorf("/mcp call: %+v, %v", res, err)
	}
}

// One connection past http.max_connections is answered 503 and closed; a
// freed slot serves the next client.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{"mcpServers": {}}`)})
	t.Cleanup(cache.Close)
	addr := serveEdge(t, testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil), HTTP: gateway.HTTPOptions{MaxConnections: 2}}))
	healthz := func(c net.Conn) (*http.Response, string) {
		t.Helper()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			return nil, err.Error()
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	var held []net.Conn
	for range 2 { // served, and kept open (keep-alive)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if resp, body := healthz(c); resp == nil || resp.StatusCode != 200 {
			t.Fatalf("connection %d: %v %s", len(held)+1, resp, body)
		}
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	resp, body := healthz(extra)
	if resp == nil || resp.StatusCode != 503 || !strings.Contains(body, "http.max_connections is 2") {
		t.Fatalf("the third connection: %v %s, want 503 naming the limit", resp, body)
	}
	if _, err := io.ReadAll(extra); err != nil {
		t.Errorf("the refused connection was not closed: %v", err)
	}
	held[0].Close()
	for { // the server frees the slot once it sees the close
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		resp, body := healthz(c)
		c.Close()
		if resp != nil && resp.StatusCode == 200 {
			break
		}
		if resp == nil || resp.StatusCode != 503 {
			t.Fatalf("after a close: %v %s", resp, body)
		}
	}
}

// blockingServer is a real streamable-HTTP MCP server whose "block" tool
// reports that it started and returns when released.
func blockingServer(t *testing.T) (url string, entered <-chan struct{}, release chan<- struct{}) {
	t.Helper()
	in, out := make(chan struct{}, 16), make(chan struct{})
	srv := server.NewMCPServer("blocking", "1.0.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("block"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in <- struct{}{}
		select {
		case <-out:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("released"), nil
	})
	srv.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echoed"), nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: server.NewStreamableHTTPServer(srv), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp", in, out
}

// A user at http.per_principal.max_concurrent_calls gets 429 naming the
// limit, and so does an internal principal acting for that user; another
// user's call, and the internal principal acting for another user, still
// go through.
func TestPerPrincipalCallLimit(t *testing.T) {
	t.Parallel()
	url, entered, release := blockingServer(t)
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, fmt.Sprintf(`{"mcpServers": {"b": {"type": "http", "url": %q}}}`, url))})
	t.Cleanup(cache.Close)
	keys := []settings.Key{{Key: "k-alice", User: "alice", Role: settings.RoleAgent}, {Key: "k-bob", User: "bob", Role: settings.RoleAgent},
		{Key: "k-svc", User: "svc", Role: settings.RoleInternal}}
	addr := serveEdge(t, testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(keys), HTTP: gateway.HTTPOptions{MaxCallsPerPrincipal: 1}}))
	call := func(key, tool, body string) edgeRequest {
		return edgeRequest{method: "POST", path: "/api/mcp/tools/b_" + tool + "/call", body: body, contentType: "application/json", key: key}
	}
	blocked := make(chan string, 1)
	go func() {
		resp, body := sendEdge(t, addr, call("k-alice", "block", `{}`))
		blocked <- fmt.Sprint(resp.StatusCode, " ", body)
	}()
	<-entered // alice's call is in flight upstream
	for _, tc := range []struct {
		name string
		req  edgeRequest
		code int
		want string
	}{
		{"alice's second call", call("k-alice", "echo", `{}`), 429, "http.per_principal.max_concurrent_calls"},
		{"internal principal acting for alice", call("k-svc", "echo", `{"user_id": "alice"}`), 429, "max_concurrent_calls"},
		{"bob", call("k-bob", "echo", `{}`), 200, "echoed"},
		{"internal principal acting for carol", call("k-svc", "echo", `{"user_id": "carol"}`), 200, "echoed"},
		{"alice's task list is not a call", edgeRequest{method: "GET", path: "/api/mcp/tools", key: "k-alice"}, 200, "b_echo"},
	} {
		resp, body := sendEdge(t, addr, tc.req)
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d containing %q", tc.name, resp.StatusCode, body, tc.code, tc.want)
		}
		if strings.Contains(body, "k-") {
			t.Errorf("%s: a key reached the answer: %s", tc.name, body)
		}
	}
	release <- struct{}{}
	if got := <-blocked; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "released") {
		t.Errorf("alice's first call: %s", got)
	}
	if resp, body := sendEdge(t, addr, call("k-alice", "echo", `{}`)); resp.StatusCode != 200 {
		t.Errorf("alice after her call ended: %d %s", resp.StatusCode, body)
	}
}

// An event stream stays open, and delivers, long past http.write_timeout,
// which bounds each of its writes instead; one user's open streams are
// capped at http.per_principal.max_event_streams while another user's
// stream opens.
func TestEventStreamsAndTheirLimit(t *testing.T) {
	t.Parallel()
	r := newEventRig(t)
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{"mcpServers": {}}`)})
	t.Cleanup(cache.Close)
	const writeTimeout = 200 * time.Millisecond
	addr := serveEdge(t, testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(eventKeys), Tasks: r.svc,
		HTTP: gateway.HTTPOptions{WriteTimeout: writeTimeout, MaxStreamsPerPrincipal: 1}}))
	url := "http://" + addr + "/api/threads/t1/mcp-tasks/events"
	// open answers a stream's status, and the body of a refusal.
	open := func(t *testing.T, key string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == 200 {
			return 200, ""
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	alice := openSSE(t, url, "alice-key", "")
	r.finish(t, "early", "alice", "t1", time.Now())
	alice.until(t, "early")
	// Let the write timeout pass several times over: a stream bound by one
	// response-wide deadline would fail its next write and end.
	time.Sleep(5 * writeTimeout)
	r.finish(t, "late", "alice", "t1", time.Now())
	alice.until(t, "late")

	if code, body := open(t, "alice-key"); code != 429 || !strings.Contains(body, "http.per_principal.max_event_streams") {
		t.Errorf("alice's second stream: %d %s, want 429 naming the limit", code, body)
	}
	bob := openSSE(t, url, "bob-key", "")
	r.finish(t, "b1", "bob", "t1", time.Now())
	bob.until(t, "b1")

	alice.resp.Body.Close()
	for { // the slot is free once the server sees the close
		code, body := open(t, "alice-key")
		if code == 200 {
			break
		}
		if code != 429 {
			t.Fatalf("alice's stream after closing hers: %d %s", code, body)
		}
	}
}

// TestIdleKeepAliveConnectionsAreClosed: a client that keeps a connection
// open after its answer and sends nothing more is disconnected once the
// idle timeout passes, so idle clients cannot hold the connection cap.
func TestIdleKeepAliveConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{"mcpServers": {}}`)})
	t.Cleanup(cache.Close)
	addr := serveEdge(t, testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil), HTTP: gateway.HTTPOptions{
		IdleTimeout: 300 * time.Millisecond}}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// A hang guard, not a timing assertion: the server closes long before.
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn) // the answer, then EOF when the server closes
	if err != nil {
		t.Fatalf("the idle connection was not closed by the server: %v (read %q)", err, got)
	}
	if !strings.HasPrefix(string(got), "HTTP/1.1 200") {
		t.Errorf("answer before the close %q, want 200", got)
	}
}
