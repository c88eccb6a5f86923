package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// schemaProbe is the demo server's schema_probe input schema, verbatim.
const schemaProbe = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","description":"probe of schema fidelity","properties":{"kind":{"type":"string","enum":["a","b"]},"n":{"type":"integer","minimum":1}},"oneOf":[{"required":["kind"]},{"required":["n"]}],"minProperties":1,"additionalProperties":false}`

// host is a real gateway over a config file with the demo server as a
// stdio and a streamable-HTTP upstream.
type host struct {
	t       *testing.T
	url     string
	cfgPath string
	bin     string
	httpURL string
	admin   string // the key that reads pool counts ("" without keys)
}

func newHost(t *testing.T, keys ...settings.Key) *host {
	t.Helper()
	return newHostWith(t, func(*mcpserver.Options) {}, keys...)
}

// newHostWith is newHost with the MCP door's options adjusted by door.
func newHostWith(t *testing.T, door func(*mcpserver.Options), keys ...settings.Key) *host {
	t.Helper()
	h := &host{t: t, bin: testmcp.Build(t), httpURL: testmcp.StartHTTP(t, "http") + "/mcp"}
	h.cfgPath = filepath.Join(t.TempDir(), "extensions_config.json")
	h.writeConfig("")
	cache := toolcache.New(toolcache.Options{ConfigPath: h.cfgPath, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	gw := testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(keys)}, door)
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	h.url = srv.URL
	return h
}

// writeConfig writes the config with extra args for the stdio server.
func (h *host) writeConfig(extraTools string) {
	h.t.Helper()
	args := "[]"
	if extraTools != "" {
		args = fmt.Sprintf(`["-tools", %q]`, extraTools)
	}
	doc := fmt.Sprintf(`{"mcpServers": {"stdio": {"command": %q, "args": %s}, "http": {"type": "http", "url": %q}}}`, h.bin, args, h.httpURL)
	if err := os.WriteFile(h.cfgPath, []byte(doc), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// rest calls the REST API.
func (h *host) rest(method, path, key string, body string) (int, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// client starts an mcp-go client on /mcp (version "" is the SDK's default,
// 2026-07-28).
func (h *host) client(version, key string, opts ...transport.StreamableHTTPCOption) *client.Client {
	h.t.Helper()
	if key != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	}
	var copts []client.ClientOption
	if version != "" {
		copts = append(copts, client.WithProtocolVersion(version))
	}
	tr, err := transport.NewStreamableHTTP(h.url+"/mcp", opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	c := client.NewClient(tr, copts...)
	h.t.Cleanup(func() { _ = c.Close() })
	ctx := h.ctx()
	if err := c.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	if version == "" {
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	}
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		h.t.Fatalf("initialize %q: %v", version, err)
	}
	return c
}

func (h *host) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

func call(t *testing.T, c *client.Client, name string, args map[string]any, meta map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	if meta != nil {
		req.Params.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// restNames lists the REST door's tool names, sorted.
func (h *host) restNames(key string) []string {
	h.t.Helper()
	code, body := h.rest("GET", "/api/mcp/tools", key, "")
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if code != 200 || json.Unmarshal(body, &list) != nil {
		h.t.Fatalf("REST tools: %d %s", code, body)
	}
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names
}

func mcpNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	return names
}

func TestEveryRevisionListsAndCallsLikeREST(t *testing.T) {
	h := newHost(t)
	for _, tc := range []struct{ name, version, want string }{
		{"2025-11-25 session", "2025-11-25", "2025-11-25"},
		{"2025-03-26 session", "2025-03-26", "2025-03-26"},
		{"2026-07-28 stateless (SDK default)", "", "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.client(tc.version, "")
			if got := c.ProtocolVersion(); got != tc.want {
				t.Errorf("negotiated %q, want %q", got, tc.want)
			}
			if got, want := mcpNames(t, c), h.restNames(""); !slices.Equal(got, want) {
				t.Errorf("tools/list %v\nREST      %v", got, want)
			}
			for _, server := range []string{"stdio", "http"} {
				res := call(t, c, server+"_echo", map[string]any{"message": "hi"}, nil)
				if res.IsError || textOf(res) != "Echo: hi" {
					t.Errorf("%s_echo: %+v", server, res)
				}
				res = call(t, c, server+"_fail", map[string]any{"message": "nope"}, nil)
				if !res.IsError || textOf(res) != "nope" {
					t.Errorf("%s_fail: %+v, want the upstream's isError result", server, res)
				}
				res = call(t, c, server+"_add", map[string]any{"a": 1.5, "b": 2}, nil)
				if sc, _ := res.StructuredContent.(map[string]any); sc["sum"] != 3.5 {
					t.Errorf("%s_add: structuredContent %v", server, res.StructuredContent)
				}
			}
		})
	}
}

// rawPost sends one JSON-RPC message to /mcp and returns the response
// message (the JSON body, or the last SSE data line).
func (h *host) rawPost(headers map[string]string, msg string) (*http.Response, []byte) {
	h.t.Helper()
	return h.postTo(h.url+"/mcp", headers, msg)
}

// postTo is rawPost to any streamable HTTP endpoint.
func (h *host) postTo(url string, headers map[string]string, msg string) (*http.Response, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && bytes.Contains(d, []byte(`"id"`)) {
				last = d
			}
		}
		b = last
	}
	return resp, b
}

// TestSchemasArriveByteForByte reads tools/list as plain HTTP: the odd
// schema ($schema, oneOf, minProperties, additionalProperties:false, key
// order) is the upstream's bytes, as on REST, and _meta carries the REST
// fields.
func TestSchemasArriveByteForByte(t *testing.T) {
	h := newHost(t)
	resp, _ := h.rawPost(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	h.rawPost(hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, body := h.rawPost(hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var msg struct {
		Result struct {
			Tools []struct {
				Name        string                     `json:"name"`
				InputSchema json.RawMessage            `json:"inputSchema"`
				Meta        map[string]json.RawMessage `json:"_meta"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("tools/list: %v: %s", err, body)
	}
	_, restBody := h.rest("GET", "/api/mcp/tools", "", "")
	var rest struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(restBody, &rest)
	restSchema := map[string]string{}
	for _, tl := range rest.Tools {
		restSchema[tl.Name] = string(tl.InputSchema)
	}
	found := false
	for _, tl := range msg.Result.Tools {
		if string(tl.InputSchema) != restSchema[tl.Name] {
			t.Errorf("%s: inputSchema %s, REST %s", tl.Name, tl.InputSchema, restSchema[tl.Name])
		}
		if tl.Name == "stdio_schema_probe" {
			found = true
			if string(tl.InputSchema) != schemaProbe {
				t.Errorf("schema_probe arrived as\n%s\nwant\n%s", tl.InputSchema, schemaProbe)
			}
			if string(tl.Meta[mcpserver.MetaServer]) != `"stdio"` || string(tl.Meta[mcpserver.MetaOriginalName]) != `"schema_probe"` {
				t.Errorf("schema_probe _meta %v", tl.Meta)
			}
		}
	}
	if !found {
		t.Fatalf("no stdio_schema_probe in %s", body)
	}
}

func TestLegacySSEListsAndCalls(t *testing.T) {
	h := newHost(t)
	c := h.sseClient("")
	if got, want := mcpNames(t, c), h.restNames(""); !slices.Equal(got, want) {
		t.Errorf("tools/list %v\nREST      %v", got, want)
	}
	if res := call(t, c, "stdio_echo", map[string]any{"message": "old"}, nil); textOf(res) != "Echo: old" {
		t.Errorf("stdio_echo over SSE: %+v", res)
	}

	// mcp-go would let any page read the stream ("*"); the gateway's CORS
	// answer (none here) stands.
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", h.url+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET /sse: %d, Access-Control-Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

func TestEdgeRulesApply(t *testing.T) {
	h := newHost(t, settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		host    string
		code    int
	}{
		{"POST without a key", "POST", "/mcp", nil, "", 401},
		{"GET /sse without a key", "GET", "/sse", nil, "", 401},
		{"POST /messages without a key", "POST", "/messages?sessionId=x", nil, "", 401},
		{"wrong key", "POST", "/mcp", map[string]string{"Authorization": "Bearer nope"}, "", 401},
		{"foreign Host (DNS rebinding)", "POST", "/mcp", map[string]string{"Authorization": "Bearer ka"}, "evil.example", 403},
		{"foreign Origin", "POST", "/mcp", map[string]string{"Authorization": "Bearer ka", "Origin": "http://evil.example"}, "", 403},
		{"cross-site GET stream", "GET", "/mcp", map[string]string{"Authorization": "Bearer ka", "Sec-Fetch-Site": "cross-site", "Accept": "text/event-stream"}, "", 403},
		{"GET without a session", "GET", "/mcp", map[string]string{"Authorization": "Bearer ka", "Accept": "text/event-stream"}, "", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.method == "POST" {
				body = strings.NewReader(init)
			}
			req, _ := http.NewRequest(tc.method, h.url+tc.path, body)
			if tc.method == "POST" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.code)
			}
			if tc.code == 401 && resp.Header.Get("WWW-Authenticate") != `Bearer realm="antler"` {
				t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestSessionIsBoundToItsPrincipal: bob cannot use, stream or end alice's
// session, on either transport.
func TestSessionIsBoundToItsPrincipal(t *testing.T) {
	h := newHost(t, settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent}, settings.Key{Key: "kb", User: "bob", Role: settings.RoleAgent})
	alice := h.client("2025-11-25", "ka")
	sid := alice.GetSessionId()
	if sid == "" {
		t.Fatal("no session id")
	}
	for _, m := range []struct{ method, body string }{
		{"POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{"GET", ""},
		{"DELETE", ""},
	} {
		req, _ := http.NewRequest(m.method, h.url+"/mcp", strings.NewReader(m.body))
		if m.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer kb")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("bob %s with alice's session: %d, want 404", m.method, resp.StatusCode)
		}
	}
	if res := call(t, alice, "stdio_echo", map[string]any{"message": "still mine"}, nil); textOf(res) != "Echo: still mine" {
		t.Errorf("alice after bob's attempts: %+v", res)
	}
	// Alice's own DELETE ends it; the id is then unknown even to her.
	req, _ := http.NewRequest("DELETE", h.url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer ka")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("alice DELETE: %d", resp.StatusCode)
	}
	resp, _ = h.rawPost(map[string]string{"Authorization": "Bearer ka", "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if resp.StatusCode != 404 {
		t.Errorf("after DELETE: %d, want 404", resp.StatusCode)
	}

	// Legacy SSE: bob cannot post into alice's SSE session.
	ssec, err := client.NewSSEMCPClient(h.url+"/sse", client.WithHeaders(map[string]string{"Authorization": "Bearer ka"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ssec.Close() })
	if err := ssec.Start(h.ctx()); err != nil {
		t.Fatal(err)
	}
	endpoint := ssec.GetTransport().(*transport.SSE).GetEndpoint()
	req, _ = http.NewRequest("POST", endpoint.String(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer kb")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("bob POST into alice's SSE session: %d, want 404", resp.StatusCode)
	}
}

// stdioSessions is the stdio server's pool count from /api/mcp/servers.
func (h *host) stdioSessions() int {
	h.t.Helper()
	_, body := h.rest("GET", "/api/mcp/servers", h.admin, "")
	var st struct {
		Servers []struct {
			Name     string `json:"name"`
			Sessions int    `json:"sessions"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		h.t.Fatalf("servers: %s", body)
	}
	for _, s := range st.Servers {
		if s.Name == "stdio" {
			return s.Sessions
		}
	}
	h.t.Fatalf("no stdio server in %s", body)
	return 0
}

func pid(t *testing.T, res *mcp.CallToolResult) float64 {
	t.Helper()
	sc, _ := res.StructuredContent.(map[string]any)
	p, ok := sc["pid"].(float64)
	if !ok {
		t.Fatalf("whoami: %+v", res)
	}
	return p
}

// TestThreadCarrierReachesTheStdioPool: _meta antler/thread_id picks the
// stdio session; the header is the fallback; no thread is the MCP
// session's own thread.
func TestThreadCarrierReachesTheStdioPool(t *testing.T) {
	h := newHost(t)
	c := h.client("2025-11-25", "", transport.WithHTTPHeaders(map[string]string{mcpserver.HeaderThreadID: "h1"}))
	whoami := func(meta map[string]any) float64 {
		return pid(t, call(t, c, "stdio_whoami", map[string]any{}, meta))
	}
	t1 := whoami(map[string]any{mcpserver.MetaThreadID: "t1"})
	t2 := whoami(map[string]any{mcpserver.MetaThreadID: "t2"})
	if t1 == t2 {
		t.Fatalf("threads t1 and t2 share process %v", t1)
	}
	if again := whoami(map[string]any{mcpserver.MetaThreadID: "t1"}); again != t1 {
		t.Errorf("t1 again: pid %v, was %v", again, t1)
	}
	h1 := whoami(nil) // the header's thread
	if h1 == t1 || h1 == t2 {
		t.Errorf("header thread h1 reused a _meta thread's process")
	}
	if n := h.stdioSessions(); n != 3 {
		t.Errorf("%d stdio sessions, want 3 (t1, t2, h1)", n)
	}
	// A bad thread id is a tool error naming the field.
	res := call(t, c, "stdio_whoami", map[string]any{}, map[string]any{mcpserver.MetaThreadID: "../x"})
	if !res.IsError || !strings.Contains(textOf(res), mcpserver.MetaThreadID) {
		t.Errorf("bad thread: %+v", res)
	}

	// Without any carrier, the session's own thread: two sessions, two
	// processes, each stable.
	a, b := h.client("2025-11-25", ""), h.client("2025-11-25", "")
	pa, pb := pid(t, call(t, a, "stdio_whoami", map[string]any{}, nil)), pid(t, call(t, b, "stdio_whoami", map[string]any{}, nil))
	if pa == pb {
		t.Errorf("two MCP sessions share stdio process %v", pa)
	}
	if again := pid(t, call(t, a, "stdio_whoami", map[string]any{}, nil)); again != pa {
		t.Errorf("session a's second call: pid %v, was %v", again, pa)
	}
	if n := h.stdioSessions(); n != 5 {
		t.Errorf("%d stdio sessions, want 5", n)
	}
}

// TestListChangedAfterConfigChange: a listening 2025-11-25 client hears
// notifications/tools/list_changed once the config file changes, and the
// next list has the new tool.
func TestListChangedAfterConfigChange(t *testing.T) {
	h := newHost(t)
	c := h.client("2025-11-25", "", transport.WithContinuousListening())
	changed := make(chan struct{}, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	if names := mcpNames(t, c); slices.Contains(names, "stdio_extra") {
		t.Fatalf("stdio_extra before the change: %v", names)
	}
	// The first list synced the tool set; only a later change counts.
	for len(changed) > 0 {
		<-changed
	}
	h.writeConfig("extra")
	select {
	case <-changed:
	case <-time.After(60 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the config change")
	}
	if names := mcpNames(t, c); !slices.Contains(names, "stdio_extra") {
		t.Errorf("no stdio_extra after the change: %v", names)
	}
}

// TestUserIDIsHonouredForInternalKeysOnly: _meta antler/user_id moves an
// internal key's call to that user's stdio session; an agent's is ignored.
func TestUserIDIsHonouredForInternalKeysOnly(t *testing.T) {
	h := newHost(t, settings.Key{Key: "kadm", User: "root", Role: settings.RoleAdmin},
		settings.Key{Key: "ki", User: "backend", Role: settings.RoleInternal},
		settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent})
	h.admin = "kadm"
	internal, agent := h.client("2025-11-25", "ki"), h.client("2025-11-25", "ka")
	as := func(c *client.Client, user string) float64 {
		meta := map[string]any{mcpserver.MetaThreadID: "t1"}
		if user != "" {
			meta[mcpserver.MetaUserID] = user
		}
		return pid(t, call(t, c, "stdio_whoami", map[string]any{}, meta))
	}
	carol := as(internal, "carol")
	if again := as(internal, "carol"); again != carol {
		t.Errorf("carol:t1 again: pid %v, was %v", again, carol)
	}
	if backend := as(internal, ""); backend == carol {
		t.Error("the internal key's own call ran in carol's session")
	}
	if alice := as(agent, "carol"); alice == carol {
		t.Error("an agent key reached carol's session through antler/user_id")
	}
	if n := h.stdioSessions(); n != 3 {
		t.Errorf("%d stdio sessions, want 3 (carol, backend, alice)", n)
	}
}
