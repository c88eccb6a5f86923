package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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
	"github.com/antler-mcp/antler/internal/virtualpath"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// doorCanary marks every credential value in the door table: none may reach
// a log line, and a result holds one only where the upstream echoes the
// header it received.
const doorCanary = "DOORCANARY"

// outcome is what one call through a door comes to, as a model (or the
// agent runtime driving it) observes it.
type outcome struct {
	// Result is the CallToolResult, normalised (see normalise); empty
	// when the door answered without one.
	Result string
	// Status is the REST door's HTTP status (0 on MCP).
	Status int
	// Failure is the text of an answer without a result: REST's error
	// body, MCP's JSON-RPC error.
	Failure string
	// ServerInfo names the server the result's _meta says produced it.
	ServerInfo string
}

// door is one way an agent reaches the host's tools.
type door interface {
	Name() string
	// Call calls tool as key's principal in thread with secrets.
	Call(ctx context.Context, key, tool string, args map[string]any, thread string, secrets map[string]string) (outcome, error)
	// List returns the tool names key sees, sorted.
	List(ctx context.Context, key string) ([]string, error)
}

// normalise is a CallToolResult as JSON without the fields that belong to
// a door's protocol revision rather than to the result: resultType (mcp-go
// sets it for a 2026-07-28 client) and _meta's serverInfo (mcp-go stamps
// the answering server's on a 2026-07-28 result; REST relays the
// upstream's as sent), which it returns. Both doors' results pass through
// it, so any other field one door adds or drops shows as a difference.
func normalise(res *mcp.CallToolResult) (result, serverInfo string) {
	res.ResultType, res.InputRequests, res.RequestState = "", nil, ""
	if info := res.Meta.ServerInfo(); info != nil {
		serverInfo = info.Name
	}
	if res.Meta != nil {
		delete(res.Meta.AdditionalFields, mcp.MetaKeyServerInfo)
		if len(res.Meta.AdditionalFields) == 0 && res.Meta.ProgressToken == nil {
			res.Meta = nil
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return "unmarshalable: " + err.Error(), serverInfo
	}
	return string(b), serverInfo
}

// volatile matches what differs between two equal calls whichever door
// they take: the length of the request Antler sent the shared HTTP
// upstream (its JSON-RPC id grows a digit) as whoami echoes it.
var volatile = regexp.MustCompile(`(\\?"content-length\\?":\\?")[0-9]+`)

// logLevel matches a _meta key an MCP door adds upstream and REST
// cannot: the caller's log level (its session's, mcp-go's "error" when it
// set none), so an upstream logs to an MCP caller at that caller's level;
// REST has no channel for log messages. whoami echoes the _meta it got.
var logLevel = regexp.MustCompile(`,?\\?"io\.modelcontextprotocol/logLevel\\?":\\?"[a-z]+\\?"`)

// clientCapabilities matches the _meta key whose value differs by door on
// 2026-07-28: a call from an MCP door, which can answer the upstream's
// questions, declares sampling and elicitation; a REST call, which cannot,
// declares none ({}). (Objects nested three deep.)
var clientCapabilities = regexp.MustCompile(`(\\?"io\.modelcontextprotocol/clientCapabilities\\?":)\{(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*\}`)

// restDoor is POST /api/mcp/tools/{name}/call.
type restDoor struct{ url string }

func (restDoor) Name() string { return "rest" }

func (d restDoor) do(ctx context.Context, method, path, key string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, d.url+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (d restDoor) Call(ctx context.Context, key, tool string, args map[string]any, thread string, secrets map[string]string) (outcome, error) {
	code, body, err := d.do(ctx, "POST", "/api/mcp/tools/"+tool+"/call", key,
		map[string]any{"arguments": args, "thread_id": thread, "secrets": secrets})
	if err != nil {
		return outcome{}, err
	}
	if code != http.StatusOK {
		var e struct{ Error string }
		if err := json.Unmarshal(body, &e); err != nil {
			return outcome{}, fmt.Errorf("status %d: %s", code, body)
		}
		return outcome{Status: code, Failure: e.Error}, nil
	}
	raw := json.RawMessage(body)
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		return outcome{}, fmt.Errorf("result %s: %w", body, err)
	}
	o := outcome{Status: code}
	o.Result, o.ServerInfo = normalise(res)
	return o, nil
}

func (d restDoor) List(ctx context.Context, key string) ([]string, error) {
	code, body, err := d.do(ctx, "GET", "/api/mcp/tools", key, nil)
	if err != nil {
		return nil, err
	}
	var list struct{ Tools []struct{ Name string } }
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil {
		return nil, fmt.Errorf("tools: %d %s", code, body)
	}
	return sortedNames(list.Tools, func(tl struct{ Name string }) string { return tl.Name }), nil
}

// sortedNames is the names of tools, sorted: REST lists in config order,
// MCP in name order.
func sortedNames[T any](tools []T, name func(T) string) []string {
	names := make([]string, 0, len(tools))
	for _, tl := range tools {
		names = append(names, name(tl))
	}
	sort.Strings(names)
	return names
}

// mcpDoor is /mcp (streamable HTTP at version) or, with sse, /sse: mcp-go's
// client, one session per key, the thread and secrets in each call's _meta
// — or, with headers, in X-Antler-* headers, one client per carrier.
type mcpDoor struct {
	name, url, version string
	sse, headers       bool
	t                  *testing.T

	mu      sync.Mutex
	clients map[string]*client.Client
}

func (d *mcpDoor) Name() string { return d.name }

// serverInfo is the server a result's _meta must name on this door:
// Antler on 2026-07-28 (mcp-go stamps it), none before.
func (d *mcpDoor) serverInfo() string {
	if mcp.IsModernProtocol(d.version) {
		return "antler"
	}
	return ""
}

// client is the door's client for key and the header carrier.
func (d *mcpDoor) client(ctx context.Context, key string, hdr map[string]string) (*client.Client, error) {
	id := key
	if len(hdr) > 0 {
		b, _ := json.Marshal(hdr)
		id += " " + string(b)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.clients[id]; ok {
		return c, nil
	}
	headers := map[string]string{"Authorization": "Bearer " + key}
	for k, v := range hdr {
		headers[k] = v
	}
	var c *client.Client
	var err error
	if d.sse {
		c, err = client.NewSSEMCPClient(d.url+"/sse", client.WithHeaders(headers))
	} else {
		var tr *transport.StreamableHTTP
		tr, err = transport.NewStreamableHTTP(d.url+"/mcp", transport.WithHTTPHeaders(headers))
		if err == nil {
			c = client.NewClient(tr, client.WithProtocolVersion(d.version))
		}
	}
	if err != nil {
		return nil, err
	}
	d.t.Cleanup(func() { _ = c.Close() })
	// The SSE stream lives as long as the context Start is given.
	if err := c.Start(context.Background()); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = d.version
	init.Params.ClientInfo = mcp.Implementation{Name: "doors", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, fmt.Errorf("initialize %s: %w", d.name, err)
	}
	if got := c.ProtocolVersion(); got != d.version {
		return nil, fmt.Errorf("%s negotiated %q", d.name, got)
	}
	if d.clients == nil {
		d.clients = map[string]*client.Client{}
	}
	d.clients[id] = c
	return c, nil
}

func (d *mcpDoor) Call(ctx context.Context, key, tool string, args map[string]any, thread string, secrets map[string]string) (outcome, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	var hdr map[string]string
	if d.headers {
		hdr = map[string]string{}
		if thread != "" {
			hdr[mcpserver.HeaderThreadID] = thread
		}
		for k, v := range secrets {
			hdr[mcpserver.HeaderSecretPrefix+k] = v
		}
	} else {
		meta := map[string]any{}
		if thread != "" {
			meta[mcpserver.MetaThreadID] = thread
		}
		if len(secrets) > 0 {
			meta[mcpserver.MetaSecrets] = secrets
		}
		req.Params.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	c, err := d.client(ctx, key, hdr)
	if err != nil {
		return outcome{}, err
	}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{}, err
		}
		return outcome{Failure: err.Error()}, nil
	}
	var o outcome
	o.Result, o.ServerInfo = normalise(res)
	return o, nil
}

func (d *mcpDoor) List(ctx context.Context, key string) ([]string, error) {
	c, err := d.client(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	return sortedNames(res.Tools, func(tl mcp.Tool) string { return tl.Name }), nil
}

// doorsHost is a real gateway whose config exercises every layer of the
// call path: credential layers on HTTP upstreams, Wasm interceptors, a
// pooled stdio server with thread workspaces, a call timeout.
type doorsHost struct {
	url  string
	logs *lockedBuffer
	data string
}

func newDoorsHost(t *testing.T) *doorsHost {
	t.Helper()
	dir := t.TempDir()
	for name, src := range map[string]string{"argpolicy.wasm": "../../examples/plugins/argpolicy", "redactor.wasm": "../../examples/plugins/redactor"} {
		b, err := os.ReadFile(plugintest.BuildWasm(t, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var tokens atomic.Int64
	tokenURL := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ParseForm() != nil || r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("client_secret") == "" {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%s-%d","token_type":"Bearer","expires_in":3600}`, doorCanary, tokens.Add(1))
	}))
	t.Cleanup(tokenURL.Close)
	up := testmcp.StartHTTP(t, "http") + "/mcp"
	doc := fmt.Sprintf(`{"mcpServers": {
	  "static":  {"type": "http", "url": %[1]q, "headers": {"X-Static": "static-%[2]s"}},
	  "oauth":   {"type": "http", "url": %[1]q, "oauth": {"token_url": %[3]q, "client_id": "antler", "client_secret": "oauth-secret-%[2]s"}},
	  "peruser": {"type": "http", "url": %[1]q, "user_auth": {"users": {"alice": "Bearer alice-%[2]s", "bob": "Bearer bob-%[2]s"}}},
	  "ctx":     {"type": "http", "url": %[1]q, "headers_from_context": {"headers": {"X-Tenant-Token": "tenant"}}},
	  "guarded": {"type": "http", "url": %[1]q},
	  "slow":    {"type": "http", "url": %[1]q, "tool_call_timeout": 1},
	  "pool":    {"command": %[4]q}
	},
	"mcpInterceptors": [
	  {"kind": "wasm", "path": "./argpolicy.wasm", "servers": ["guarded"],
	   "config": {"deny": [{"tool": "*echo", "pattern": "rm\\s+-rf", "message": "Recursive deletes are not allowed."}]}},
	  {"kind": "wasm", "path": "./redactor.wasm", "servers": ["guarded"], "config": {"patterns": ["sk-[A-Za-z0-9]+"]}}
	]}`, up, doorCanary, tokenURL.URL, testmcp.Build(t))
	cfg := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: data, Logger: log})
	t.Cleanup(cache.Close)
	gw := testgateway.New(t, gateway.Options{Cache: cache, Logger: log, Auth: principal.New([]settings.Key{
		{Key: "k-alice", User: "alice", Role: settings.RoleAgent},
		{Key: "k-bob", User: "bob", Role: settings.RoleAgent},
		{Key: "k-carol", User: "carol", Role: settings.RoleAgent},
		{Key: "k-admin", User: "root", Role: settings.RoleAdmin},
	})})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	return &doorsHost{url: srv.URL, logs: logs, data: data}
}

// sessions is the pool's session count of server (admin view).
func (h *doorsHost) sessions(t *testing.T, server string) int {
	t.Helper()
	code, body, err := restDoor{h.url}.do(t.Context(), "GET", "/api/mcp/servers", "k-admin", nil)
	var st struct {
		Servers []struct {
			Name     string
			Sessions int
		}
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("servers: %d %v %s", code, err, body)
	}
	for _, s := range st.Servers {
		if s.Name == server {
			return s.Sessions
		}
	}
	t.Fatalf("no server %q in %s", server, body)
	return 0
}

// result is an outcome's CallToolResult as a tree, for the fields a case
// observes.
type result struct {
	IsError           bool `json:"isError"`
	Content           []struct{ Text string }
	StructuredContent map[string]any `json:"structuredContent"`
	Meta              map[string]any `json:"_meta"`
}

func decode(t *testing.T, o outcome) result {
	t.Helper()
	var r result
	if o.Result == "" {
		t.Fatalf("no result: %+v", o)
	}
	if err := json.Unmarshal([]byte(o.Result), &r); err != nil {
		t.Fatalf("result %s: %v", o.Result, err)
	}
	return r
}

func (r result) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// header is the value of an HTTP header the demo's whoami says it received.
func (r result) header(name string) string {
	h, _ := r.StructuredContent["headers"].(map[string]any)
	s, _ := h[name].(string)
	return s
}

func (r result) pid() float64 {
	p, _ := r.StructuredContent["pid"].(float64)
	return p
}

// toolText is an outcome reduced to what a model reads: the isError flag
// and the text, or the failure of an answer without a result.
type toolText struct {
	Status  int // REST only
	IsError bool
	Text    string
}

func asText(t *testing.T, o outcome) toolText {
	t.Helper()
	if o.Result == "" {
		return toolText{Status: o.Status, Text: o.Failure}
	}
	r := decode(t, o)
	return toolText{Status: o.Status, IsError: r.IsError, Text: r.text()}
}

// TestBothDoors runs one table against every door: the REST API, /mcp at
// 2025-11-25 (carrier in _meta, and in X-Antler-* headers), /mcp at
// 2026-07-28 and legacy SSE. Each case reduces its calls to what a model or
// operator observes and must observe the same on every door (a documented
// difference is spelled out per door); the normalised CallToolResults of
// the single-call cases must be equal byte for byte across doors.
func TestBothDoors(t *testing.T) {
	h := newDoorsHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	doors := []door{
		restDoor{h.url},
		&mcpDoor{t: t, name: "mcp-2025-11-25", url: h.url, version: "2025-11-25"},
		&mcpDoor{t: t, name: "mcp-2025-11-25-headers", url: h.url, version: "2025-11-25", headers: true},
		&mcpDoor{t: t, name: "mcp-2026-07-28", url: h.url, version: "2026-07-28"},
		&mcpDoor{t: t, name: "sse-2024-11-05", url: h.url, version: "2024-11-05", sse: true},
	}
	// One call and what it must come to. threads are made per door so
	// each door gets its own stdio sessions and workspace files.
	type callCase struct {
		name    string
		key     string
		tool    string
		args    map[string]any
		secrets map[string]string
		// observe reduces the outcome; want is what every door observes
		// (wantREST, when set, is REST's where the doors document a
		// difference).
		observe  func(t *testing.T, o outcome) any
		want     any
		wantREST any
		// volatile results (a stdio process id) are not compared byte
		// for byte.
		volatile bool
	}
	header := func(name string) func(*testing.T, outcome) any {
		return func(t *testing.T, o outcome) any {
			r := decode(t, o)
			return fmt.Sprintf("isError=%v %s=%q", r.IsError, name, r.header(name))
		}
	}
	text := func(t *testing.T, o outcome) any { return asText(t, o) }
	denial := func(msg string) toolText { return toolText{IsError: true, Text: msg} }
	restOK := func(tt toolText) toolText { tt.Status = 200; return tt }
	// secretOnlyInItsHeader: the per-request secret reaches the upstream
	// as its header and appears nowhere else in the result.
	secretOnlyInItsHeader := func(t *testing.T, o outcome) any {
		r := decode(t, o)
		rest := strings.NewReplacer(`"x-tenant-token":"t-`+doorCanary, "", `\"x-tenant-token\":\"t-`+doorCanary, "").Replace(o.Result)
		return fmt.Sprintf("x-tenant-token=%q canaries elsewhere=%d", r.header("x-tenant-token"), strings.Count(rest, doorCanary))
	}
	writes := func(t *testing.T, o outcome) any {
		r := decode(t, o)
		if strings.Contains(o.Result, h.data) {
			t.Errorf("a host path reached the agent: %s", o.Result)
		}
		return fmt.Sprintf("isError=%v text=%q changed=%v", r.IsError, r.text(), r.Meta[virtualpath.MetaChangedFiles])
	}
	vws := virtualpath.Prefix + "/workspace"
	calls := []callCase{
		{name: "static header", key: "k-alice", tool: "static_whoami", observe: header("x-static"),
			want: `isError=false x-static="static-` + doorCanary + `"`},
		{name: "oauth token", key: "k-alice", tool: "oauth_whoami", observe: header("authorization"),
			// Discovery fetched the token; every call reuses it.
			want: `isError=false authorization="Bearer tok-` + doorCanary + `-1"`},
		{name: "user_auth alice", key: "k-alice", tool: "peruser_whoami", observe: header("authorization"),
			want: `isError=false authorization="Bearer alice-` + doorCanary + `"`},
		{name: "user_auth bob", key: "k-bob", tool: "peruser_whoami", observe: header("authorization"),
			want: `isError=false authorization="Bearer bob-` + doorCanary + `"`},
		{name: "user_auth carol has none: denied", key: "k-carol", tool: "peruser_whoami", observe: text,
			want:     denial("No credential is configured for your account (user id 'carol') on MCP server 'peruser'. Ask the operator to add this exact id to that server's user_auth.users map (or set its environment variable)."),
			wantREST: restOK(denial("No credential is configured for your account (user id 'carol') on MCP server 'peruser'. Ask the operator to add this exact id to that server's user_auth.users map (or set its environment variable)."))},
		{name: "headers_from_context sent", key: "k-alice", tool: "ctx_whoami", secrets: map[string]string{"tenant": "t-" + doorCanary},
			observe: secretOnlyInItsHeader, want: `x-tenant-token="t-` + doorCanary + `" canaries elsewhere=0`},
		{name: "headers_from_context missing: denied", key: "k-alice", tool: "ctx_whoami", observe: text,
			want:     denial("MCP server 'ctx' needs request-scoped credential(s) tenant. Send them in config.context.secrets, or set this server's headers_from_context.on_missing to 'passthrough'."),
			wantREST: restOK(denial("MCP server 'ctx' needs request-scoped credential(s) tenant. Send them in config.context.secrets, or set this server's headers_from_context.on_missing to 'passthrough'."))},
		{name: "argpolicy denies", key: "k-alice", tool: "guarded_echo", args: map[string]any{"message": "rm -rf /"}, observe: text,
			want: denial("Recursive deletes are not allowed."), wantREST: restOK(denial("Recursive deletes are not allowed."))},
		{name: "argpolicy lets a harmless call through", key: "k-alice", tool: "guarded_echo", args: map[string]any{"message": "rm -r f"}, observe: text,
			want: toolText{Text: "Echo: rm -r f"}, wantREST: toolText{Status: 200, Text: "Echo: rm -r f"}},
		{name: "redactor rewrites the result", key: "k-alice", tool: "guarded_echo", args: map[string]any{"message": "key sk-abc123 ok"}, observe: text,
			want: toolText{Text: "Echo: key [REDACTED] ok"}, wantREST: toolText{Status: 200, Text: "Echo: key [REDACTED] ok"}},
		{name: "upstream isError", key: "k-alice", tool: "static_fail", args: map[string]any{"message": "nope"}, observe: text,
			want: denial("nope"), wantREST: restOK(denial("nope"))},
		{name: "tool_call_timeout", key: "k-alice", tool: "slow_sleep", args: map[string]any{"ms": 30000}, observe: text,
			want: denial("MCP tool 'sleep' on server 'slow' timed out after 1s"), wantREST: restOK(denial("MCP tool 'sleep' on server 'slow' timed out after 1s"))},
		// Documented difference: REST answers an unknown tool 404; on MCP
		// it is a JSON-RPC error (-32602, mcp-go's, as the spec asks),
		// not a tool result.
		{name: "unknown tool", key: "k-alice", tool: "nope_tool", observe: text,
			want:     toolText{Text: "invalid params: tool 'nope_tool' not found: tool not found"},
			wantREST: toolText{Status: 404, Text: `unknown tool "nope_tool"`}},
		{name: "a file written in the thread workspace is a virtual path", key: "k-alice", tool: "pool_write_file",
			args: map[string]any{"path": "out/report.md", "content": "x"}, observe: writes,
			want: fmt.Sprintf("isError=false text=%q changed=[%s]", vws+"/out/report.md", vws+"/out/report.md")},
	}
	for i := range calls {
		if calls[i].wantREST == nil {
			calls[i].wantREST = calls[i].want
		}
	}

	// The normalised results, per case, per door.
	results := map[string]map[string]string{}
	for _, d := range doors {
		t.Run(d.Name(), func(t *testing.T) {
			t.Run("list", func(t *testing.T) {
				got, err := d.List(ctx, "k-alice")
				if err != nil {
					t.Fatal(err)
				}
				want, err := restDoor{h.url}.List(ctx, "k-alice")
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("tools %v\nREST  %v", got, want)
				}
			})
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					o, err := d.Call(ctx, c.key, c.tool, c.args, "t-"+d.Name(), c.secrets)
					if err != nil {
						t.Fatal(err)
					}
					want := c.want
					if d.Name() == "rest" {
						want = c.wantREST
					}
					if got := c.observe(t, o); !reflect.DeepEqual(got, want) {
						t.Errorf("observed %+v\nwant     %+v\nresult   %s", got, want, o.Result)
					}
					// The answering server is Antler's on 2026-07-28 and
					// absent before: never the upstream's.
					if md, ok := d.(*mcpDoor); ok && o.Result != "" && o.ServerInfo != md.serverInfo() {
						t.Errorf("result _meta serverInfo %q, want %q", o.ServerInfo, md.serverInfo())
					}
					if results[c.name] == nil {
						results[c.name] = map[string]string{}
					}
					if !c.volatile {
						results[c.name][d.Name()] = clientCapabilities.ReplaceAllString(logLevel.ReplaceAllString(volatile.ReplaceAllString(o.Result, "${1}N"), ""), "${1}C")
					}
				})
			}
			t.Run("stdio pool", func(t *testing.T) {
				whoami := func(key, thread string) float64 {
					t.Helper()
					o, err := d.Call(ctx, key, "pool_whoami", nil, thread, nil)
					if err != nil {
						t.Fatal(err)
					}
					r := decode(t, o)
					if r.pid() == 0 {
						t.Fatalf("whoami: %s", o.Result)
					}
					return r.pid()
				}
				before := h.sessions(t, "pool")
				a := "pool-" + d.Name() + "-a"
				alice := whoami("k-alice", a)
				again := whoami("k-alice", a)
				other := whoami("k-alice", "pool-"+d.Name()+"-b")
				bob := whoami("k-bob", a)
				got := fmt.Sprintf("same thread one session=%v, two threads two sessions=%v, another user another session=%v, new sessions=%d",
					alice == again, other != alice, bob != alice && bob != other, h.sessions(t, "pool")-before)
				if want := "same thread one session=true, two threads two sessions=true, another user another session=true, new sessions=3"; got != want {
					t.Errorf("%s\nwant %s", got, want)
				}
			})
		})
	}

	t.Run("results are equal across doors", func(t *testing.T) {
		for _, c := range calls {
			if c.volatile {
				continue
			}
			rest := results[c.name]["rest"]
			for _, d := range doors[1:] {
				if got, ok := results[c.name][d.Name()]; ok && got != rest {
					t.Errorf("%s: %s\n  %s\n  rest %s", c.name, d.Name(), got, rest)
				}
			}
		}
	})

	// One call path: the same (user, thread) is the same stdio session
	// whichever door the call comes through.
	t.Run("one pool behind both doors", func(t *testing.T) {
		var pids []float64
		for _, d := range doors {
			o, err := d.Call(ctx, "k-alice", "pool_whoami", nil, "shared", nil)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, decode(t, o).pid())
		}
		for i, p := range pids {
			if p == 0 || p != pids[0] {
				t.Errorf("%s ran thread 'shared' in process %v, rest in %v", doors[i].Name(), p, pids[0])
			}
		}
	})

	if i := strings.Index(h.logs.String(), doorCanary); i >= 0 {
		s := h.logs.String()
		t.Errorf("a credential reached a log line: …%s…", s[max(0, i-160):min(len(s), i+40)])
	}
}
