package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/eventually"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/conformance"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// upstreamArg makes the test binary a stdio MCP server (see TestMain): the
// upstream whose side of a cancellation the tests read.
const upstreamArg = "antler-relay-upstream"

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == upstreamArg {
		serveUpstream(os.Args[2])
		os.Exit(0)
	}
	if len(os.Args) == 3 && os.Args[1] == watchUpstreamArg {
		serveWatchUpstream(os.Args[2])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveUpstream serves, on stdio, the tools "wait" (a log message and a
// progress notification, then blocks until cancelled or released, see
// relayHost.release) and "roots" (asks its client for roots), appending
// "started <tag>", "cancelled <tag>" and "released <tag>" lines to record.
func serveUpstream(record string) {
	note := recorder(record)
	srv := server.NewMCPServer("relayup", "1", server.WithLogging())
	srv.AddTool(mcp.NewTool("wait", mcp.WithString("tag", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tag := req.GetString("tag", "")
		// Sent at info whatever level the session has, as a chatty server would.
		_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationMessage), map[string]any{"level": "info", "logger": "relayup", "data": "waiting " + tag})
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1, "total": 2})
		}
		note("started " + tag)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				note("cancelled " + tag)
				return nil, ctx.Err()
			case <-tick.C:
				if _, err := os.Stat(record + ".release-" + tag); err == nil {
					note("released " + tag)
					return mcp.NewToolResultText("released " + tag), nil
				}
			}
		}
	})
	srv.AddTool(mcp.NewTool("roots"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := srv.RequestRoots(ctx, mcp.ListRootsRequest{})
		if err != nil {
			return mcp.NewToolResultError("roots: " + err.Error()), nil
		}
		b, _ := json.Marshal(res.Roots)
		return mcp.NewToolResultText(string(b)), nil
	})
	// storm: a list_changed storm on the caller's own stdio session.
	srv.AddTool(mcp.NewTool("storm"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for range 200 {
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationResourcesListChanged), nil)
		}
		return mcp.NewToolResultText("stormed"), nil
	})
	_ = server.NewStdioServer(srv).Listen(context.Background(), os.Stdin, os.Stdout)
}

// recorder appends lines to a test upstream's record file.
func recorder(record string) func(line string) {
	return func(line string) {
		f, err := os.OpenFile(record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// relayHost is a gateway fronting server-everything over stdio and
// streamable HTTP, the conformance fixture and the test binary over stdio.
type relayHost struct {
	*host
	record string
	ends   *requestEnds
	log    *lockedBuffer // the gateway's log, at debug level
}

// release lets the upstream's wait call of tag return "released <tag>".
func (h *relayHost) release(t *testing.T, tag string) {
	t.Helper()
	if err := os.WriteFile(h.record+".release-"+tag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// requestEnds sees, at the HTTP server, when the context of a tools/call
// request naming arguments.tag ends: the moment the server knows its
// client went away (or it answered).
type requestEnds struct {
	mu  sync.Mutex
	by  map[string]chan struct{}
	out http.Handler
}

func (e *requestEnds) of(tag string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.by[tag] == nil {
		e.by[tag] = make(chan struct{})
	}
	return e.by[tag]
}

func (e *requestEnds) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Arguments struct {
					Tag string `json:"tag"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodToolsCall) && msg.Params.Arguments.Tag != "" {
			ended := e.of(msg.Params.Arguments.Tag)
			context.AfterFunc(r.Context(), func() { close(ended) })
		}
	}
	e.out.ServeHTTP(w, r)
}

// ended waits until the server saw the tools/call of tag end.
func (h *relayHost) ended(t *testing.T, tag string) {
	t.Helper()
	select {
	case <-h.ends.of(tag):
	case <-h.ctx().Done():
		t.Fatalf("the server never saw the call %q end", tag)
	}
}

func newRelayHost(t *testing.T, keys ...settings.Key) *relayHost {
	t.Helper()
	index := testnpm.Everything(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(t.TempDir(), "record")
	servers := map[string]any{
		"ev":   map[string]any{"command": "node", "args": []string{index}},
		"evh":  map[string]any{"type": "http", "url": testnpm.StartEverythingHTTP(t)},
		"conf": map[string]any{"command": conformance.BuildFixture(t)},
		// 2025-11-25: its roots tool sends roots/list (2026-07-28 has no
		// server requests, and the host declares no roots capability for
		// input requests).
		"up": map[string]any{"command": exe, "args": []string{upstreamArg, record}, "protocol_version": "2025-11-25"},
	}
	doc, _ := json.Marshal(map[string]any{"mcpServers": servers})
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	logs := &lockedBuffer{}
	gw := testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(keys),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ends := &requestEnds{by: map[string]chan struct{}{}, out: gw.Handler()}
	srv := httptest.NewServer(ends)
	t.Cleanup(func() { gw.Close(); srv.Close() })
	return &relayHost{host: &host{t: t, url: srv.URL}, record: record, ends: ends, log: logs}
}

// recorded waits for line in the upstream's record.
func (h *relayHost) recorded(t *testing.T, line string) {
	t.Helper()
	eventually.Check(t, fmt.Sprintf("the upstream to record %q", line), func() (bool, string) {
		b, _ := os.ReadFile(h.record)
		for l := range strings.SplitSeq(string(b), "\n") {
			if l == line {
				return true, ""
			}
		}
		return false, fmt.Sprintf("it recorded %q", b)
	})
}

// answers are the test client's sampling, elicitation and roots handlers.
type answers struct{}

func (answers) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{Model: "test-model", SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(fmt.Sprintf("sampled words (%d messages)", len(req.Messages)))}}, nil
}

func (answers) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"name": "Ada Lovelace", "check": true, "firstLine": "x", "email": "ada@example.com", "age": 36, "score": 50,
			"untitledSingleSelectEnum": "Option 1", "untitledMultipleSelectEnum": []any{"Option 1"}, "titledSingleSelectEnum": "opt1", "titledMultipleSelectEnum": []any{"opt1"}, "legacyTitledEnum": "opt1",
			"username": "ada", "status": "active", "interests": []any{"math"}}}}, nil
}

func (answers) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work/ada", Name: "ada"}}}, nil
}

// notes records a client's notifications.
type notes struct {
	mu   sync.Mutex
	seen []mcp.JSONRPCNotification
}

func (n *notes) add(x mcp.JSONRPCNotification) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen = append(n.seen, x)
}

// of returns the notifications of method so far.
func (n *notes) of(method string) []mcp.JSONRPCNotification {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, x := range n.seen {
		if x.Method == method {
			out = append(out, x)
		}
	}
	return out
}

// relayClient opens an mcp-go client on /mcp; answering gives it the
// sampling, elicitation and roots handlers, listen its GET stream.
func (h *relayHost) relayClient(t *testing.T, version string, answering, listen bool) (*client.Client, *notes) {
	t.Helper()
	var copts []client.ClientOption
	if answering {
		copts = append(copts, client.WithSamplingHandler(answers{}), client.WithElicitationHandler(answers{}), client.WithRootsHandler(answers{}))
	}
	return h.clientWith(t, version, listen, copts...)
}

// clientWith opens an mcp-go client on /mcp with copts (the handlers it
// declares), listen its GET stream.
func (h *relayHost) clientWith(t *testing.T, version string, listen bool, copts ...client.ClientOption) (*client.Client, *notes) {
	t.Helper()
	var topts []transport.StreamableHTTPCOption
	if listen {
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(h.url+"/mcp", topts...)
	if err != nil {
		t.Fatal(err)
	}
	if version != "" {
		copts = append(copts, client.WithProtocolVersion(version))
	}
	c := client.NewClient(tr, copts...)
	t.Cleanup(func() { _ = c.Close() })
	n := &notes{}
	c.OnNotification(n.add)
	ctx := h.ctx()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	if version == "" {
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	}
	init.Params.ClientInfo = mcp.Implementation{Name: "relay-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize %q: %v", version, err)
	}
	if err := c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelInfo}}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	return c, n
}

// progressTokens are the tokens of the progress notifications seen.
func progressTokens(ns []mcp.JSONRPCNotification) []string {
	var out []string
	for _, x := range ns {
		out = append(out, fmt.Sprint(x.Params.AdditionalFields["progressToken"]))
	}
	return out
}

var revisions = []struct{ name, version string }{
	{"2025-11-25", "2025-11-25"},
	{"2026-07-28", ""},
}

// TestProgressReachesTheCallerBeforeItsResult: a tools/call with a progress
// token gets the upstream's progress notifications, with its own token, on
// its own stream before the result, from server-everything over stdio and
// HTTP and from the conformance fixture.
func TestProgressReachesTheCallerBeforeItsResult(t *testing.T) {
	h := newRelayHost(t)
	for _, rev := range revisions {
		for _, tc := range []struct {
			tool, args string
			want       int
		}{
			{"ev_trigger-long-running-operation", `{"duration":0.3,"steps":3}`, 3},
			{"evh_trigger-long-running-operation", `{"duration":0.3,"steps":3}`, 3},
			{"conf_test_tool_with_progress", `{}`, 3},
		} {
			t.Run(rev.name+"/"+tc.tool, func(t *testing.T) {
				c, n := h.relayClient(t, rev.version, false, false)
				var args map[string]any
				_ = json.Unmarshal([]byte(tc.args), &args)
				token := "tok-" + rev.name
				res := call(t, c, tc.tool, args, map[string]any{"progressToken": token})
				if res.IsError {
					t.Fatalf("result: %s", textOf(res))
				}
				got := progressTokens(n.of(string(mcp.MethodNotificationProgress)))
				if len(got) != tc.want {
					t.Fatalf("%d progress notifications before the result (%q), want %d", len(got), got, tc.want)
				}
				for _, tok := range got {
					if tok != token {
						t.Errorf("progress token %q, want the caller's %q", tok, token)
					}
				}
			})
		}
	}
}

// TestServerRequestsReachTheCaller: elicitation, sampling and roots asked
// by the upstream during a call are answered by the downstream client that
// made it; a client without the capability, or (for sampling and roots)
// without a stream to be asked on, makes a clear error; a 2026-07-28
// client gets a clear refusal (mcp-go gives such clients no server
// requests).
func TestServerRequestsReachTheCaller(t *testing.T) {
	h := newRelayHost(t)
	tests := []struct {
		name, version     string
		answering, listen bool
		tool, args        string
		want              string // in the result's text
		wantErr           bool
	}{
		{name: "elicitation stdio", version: "2025-11-25", answering: true, tool: "ev_trigger-elicitation-request", args: `{}`, want: "Ada Lovelace"},
		{name: "elicitation http", version: "2025-11-25", answering: true, tool: "evh_trigger-elicitation-request", args: `{}`, want: "Ada Lovelace"},
		{name: "elicitation fixture", version: "2025-11-25", answering: true, tool: "conf_test_elicitation", args: `{"message":"who?"}`, want: "action=accept"},
		{name: "sampling stdio", version: "2025-11-25", answering: true, listen: true, tool: "ev_trigger-sampling-request", args: `{"prompt":"hello"}`, want: "sampled words"},
		{name: "sampling http", version: "2025-11-25", answering: true, listen: true, tool: "evh_trigger-sampling-request", args: `{"prompt":"hello"}`, want: "sampled words"},
		{name: "sampling fixture", version: "2025-11-25", answering: true, listen: true, tool: "conf_test_sampling", args: `{"prompt":"hello"}`, want: "sampled words"},
		{name: "roots", version: "2025-11-25", answering: true, listen: true, tool: "up_roots", args: `{}`, want: "file:///work/ada"},
		{name: "no elicitation capability", version: "2025-11-25", tool: "ev_trigger-elicitation-request", args: `{}`,
			want: "the MCP client of this session does not support elicitation", wantErr: true},
		{name: "no sampling capability", version: "2025-11-25", listen: true, tool: "evh_trigger-sampling-request", args: `{"prompt":"hello"}`,
			want: "the MCP client of this session does not support sampling", wantErr: true},
		{name: "sampling without a GET stream", version: "2025-11-25", answering: true, tool: "ev_trigger-sampling-request", args: `{"prompt":"hello"}`,
			want: "no GET stream open", wantErr: true},
		// 2026-07-28: the questions go in input_required results, and the
		// client's retries carry the answers.
		{name: "elicitation 2026-07-28 stdio", answering: true, tool: "ev_trigger-elicitation-request", args: `{}`, want: "Ada Lovelace"},
		{name: "elicitation 2026-07-28 http", answering: true, tool: "evh_trigger-elicitation-request", args: `{}`, want: "Ada Lovelace"},
		{name: "elicitation 2026-07-28 fixture", answering: true, tool: "conf_test_elicitation", args: `{"message":"who?"}`, want: "action=accept"},
		{name: "sampling 2026-07-28 stdio", answering: true, tool: "ev_trigger-sampling-request", args: `{"prompt":"hello"}`, want: "sampled words"},
		{name: "sampling 2026-07-28 fixture", answering: true, tool: "conf_test_sampling", args: `{"prompt":"hello"}`, want: "sampled words"},
		{name: "roots 2026-07-28", answering: true, tool: "up_roots", args: `{}`, want: "file:///work/ada"},
		{name: "no elicitation capability 2026-07-28", tool: "ev_trigger-elicitation-request", args: `{}`,
			want: "the MCP client of this session does not support elicitation", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := h.relayClient(t, tc.version, tc.answering, tc.listen)
			callExpecting(t, c, tc.tool, tc.args, tc.want, tc.wantErr)
		})
	}
}

// callExpecting calls tool with args (JSON) on c and checks that the
// result's text holds want and is an error exactly when wantErr.
func callExpecting(t *testing.T, c *client.Client, tool, args, want string, wantErr bool) {
	t.Helper()
	var a map[string]any
	_ = json.Unmarshal([]byte(args), &a)
	res := call(t, c, tool, a, nil)
	text := textOf(res)
	if !strings.Contains(text, want) {
		t.Errorf("result %q, want %q in it", text, want)
	}
	if wantErr != (res.IsError || strings.Contains(strings.ToLower(text), "error")) {
		t.Errorf("result %q: error %v, want %v", text, res.IsError, wantErr)
	}
}

// TestLegacySSERelaysNotificationsOnly: over the legacy HTTP+SSE
// transport a call gets its progress, and an upstream's elicitation gets a
// clear error (mcp-go's SSE sessions carry no server requests).
func TestLegacySSERelaysNotificationsOnly(t *testing.T) {
	h := newRelayHost(t)
	tr, err := transport.NewSSE(h.url + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithElicitationHandler(answers{}))
	t.Cleanup(func() { _ = c.Close() })
	n := &notes{}
	c.OnNotification(n.add)
	if err := c.Start(h.ctx()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2024-11-05"
	init.Params.ClientInfo = mcp.Implementation{Name: "relay-test", Version: "1"}
	if _, err := c.Initialize(h.ctx(), init); err != nil {
		t.Fatal(err)
	}
	if res := call(t, c, "ev_trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3}, map[string]any{"progressToken": "sse-1"}); res.IsError {
		t.Fatalf("result: %s", textOf(res))
	}
	if got := progressTokens(n.of(string(mcp.MethodNotificationProgress))); len(got) != 3 {
		t.Errorf("progress notifications %q, want 3 with sse-1", got)
	}
	if text := textOf(call(t, c, "ev_trigger-elicitation-request", map[string]any{}, nil)); !strings.Contains(text, "legacy HTTP+SSE") {
		t.Errorf("elicitation over SSE: %q, want the clear error", text)
	}
}

// modernCall posts one 2026-07-28 tools/call as key and returns the body.
func (h *relayHost) modernCall(t *testing.T, key, tool, extra string) string {
	t.Helper()
	return modernPost(t, h.url, map[string]string{"Authorization": "Bearer " + key}, tool, extra)
}

// modernPost posts one 2026-07-28 tools/call, with extra params and the
// caller's headers, to base's /mcp and returns the body.
func modernPost(t *testing.T, base string, headers map[string]string, tool, extra string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` + extra + `
		"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},
		"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, "tools/call")
	req.Header.Set(mcp.HeaderName, tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}

var requestState = regexp.MustCompile(`"requestState":"(antler-round-[0-9a-f]+)"`)

// TestRequestStateIsTheCallersOwn: a 2026-07-28 call whose upstream asks
// for input answers with the question under a requestState; a retry with
// that state by another caller, or with a state the door never minted, is
// refused; the caller's own retry gets the upstream's result.
func TestRequestStateIsTheCallersOwn(t *testing.T) {
	h := newRelayHost(t, settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent}, settings.Key{Key: "kb", User: "bob", Role: settings.RoleAgent})
	const tool = "ev_trigger-elicitation-request"
	asked := h.modernCall(t, "ka", tool, "")
	m := requestState.FindStringSubmatch(asked)
	if m == nil || !strings.Contains(asked, `"input_required"`) || !strings.Contains(asked, `"elicitation/create"`) {
		t.Fatalf("first round: %s, want an elicitation input request", asked)
	}
	answer := `"inputResponses":{"antler":{"action":"decline"}},`
	for _, tc := range []struct{ key, state string }{{"kb", m[1]}, {"ka", "antler-round-0123"}} {
		if got := h.modernCall(t, tc.key, tool, `"requestState":"`+tc.state+`",`+answer); !strings.Contains(got, "unknown or expired requestState") || !strings.Contains(got, `"isError":true`) {
			t.Errorf("retry as %s with %s: %s, want it refused", tc.key, tc.state, got)
		}
	}
	if got := h.modernCall(t, "ka", tool, `"requestState":"`+m[1]+`",`+answer); !strings.Contains(got, "decline") || strings.Contains(got, `"isError":true`) {
		t.Errorf("the caller's retry: %s, want the upstream's result for a declined elicitation", got)
	}
}

// TestUpstreamLogsReachTheCaller: a log message the upstream sends during
// a call reaches the calling session at the level it set, while the call
// is still running. (The upstream writes the message from another
// goroutine than the tool's, so its record of having started says nothing
// about where the message is: the test waits for the message itself, and
// only then ends the call.)
func TestUpstreamLogsReachTheCaller(t *testing.T) {
	h := newRelayHost(t)
	c, n := h.relayClient(t, "2025-11-25", false, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "up_wait", map[string]any{"tag": "log"}
		_, _ = c.CallTool(ctx, req)
	}()
	logs := func() []string {
		var got []string
		for _, x := range n.of(string(mcp.MethodNotificationMessage)) {
			got = append(got, fmt.Sprint(x.Params.AdditionalFields["data"]))
		}
		return got
	}
	eventually.Check(t, "the upstream's log message to reach the caller during the call", func() (bool, string) {
		got := logs()
		return len(got) > 0, fmt.Sprintf("log messages %q", got)
	})
	select {
	case <-done:
		t.Fatal("the call ended before the test ended it")
	default:
	}
	cancel()
	<-done
	if got := logs(); len(got) != 1 || got[0] != "waiting log" {
		t.Errorf("log messages %q, want the upstream's one", got)
	}
}

// TestFixtureLogsReachTheCaller: the conformance fixture's
// test_tool_with_logging messages reach the caller, at the level it set
// (2025-11-25) or declared on the request (2026-07-28). The fixture sends
// its last message just before its result, and mcp-go's stdio server
// writes notifications from another goroutine than results, so that one
// may reach the host after the call ended: only the first two are sure.
func TestFixtureLogsReachTheCaller(t *testing.T) {
	h := newRelayHost(t)
	for _, rev := range revisions {
		t.Run(rev.name, func(t *testing.T) {
			c, n := h.relayClient(t, rev.version, false, false)
			if res := call(t, c, "conf_test_tool_with_logging", map[string]any{}, nil); res.IsError {
				t.Fatalf("result: %s", textOf(res))
			}
			var got []string
			for _, x := range n.of(string(mcp.MethodNotificationMessage)) {
				got = append(got, fmt.Sprint(x.Params.AdditionalFields["level"], " ", x.Params.AdditionalFields["data"]))
			}
			if len(got) < 2 || got[0] != "info Tool execution started" || got[1] != "info Tool processing data" {
				t.Errorf("log messages before the result %q, want the fixture's at info", got)
			}
		})
	}
}

// TestCancellationReachesTheUpstream: a call the downstream client
// cancels with notifications/cancelled is cancelled upstream (a stdio
// server sees notifications/cancelled), and so is a 2026-07-28 call whose
// request closes (that revision's cancellation). A session's call whose
// request closes is not: the client may resume its stream, so the call
// runs on and the upstream finishes it.
func TestCancellationReachesTheUpstream(t *testing.T) {
	h := newRelayHost(t)
	for _, rev := range revisions {
		t.Run(rev.name+"/request closed", func(t *testing.T) {
			c, n := h.relayClient(t, rev.version, false, false)
			tag := "closed-" + rev.name
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = "up_wait", map[string]any{"tag": tag}
				req.Params.Meta = &mcp.Meta{ProgressToken: tag}
				_, err := c.CallTool(ctx, req)
				errc <- err
			}()
			// The call is under way upstream once its progress arrives.
			eventually.True(t, "progress from the upstream call", func() bool { return len(n.of(string(mcp.MethodNotificationProgress))) > 0 })
			if got := progressTokens(n.of(string(mcp.MethodNotificationProgress))); len(got) != 1 || got[0] != tag {
				t.Errorf("progress before the cancel: %q", got)
			}
			cancel()
			if err := <-errc; err == nil {
				t.Error("the abandoned call succeeded")
			}
			if rev.version == "" {
				h.recorded(t, "cancelled "+tag)
				return
			}
			h.ended(t, tag) // the server knows the client went away
			h.release(t, tag)
			h.recorded(t, "released "+tag)
			if b, _ := os.ReadFile(h.record); strings.Contains(string(b), "cancelled "+tag) {
				t.Errorf("a closed request of a session cancelled its call: %q", b)
			}
		})
	}
	t.Run("2025-11-25/notifications/cancelled", func(t *testing.T) {
		c, _ := h.relayClient(t, "2025-11-25", false, false)
		h.cancelByNotification(t, c, "notified")
	})
}

// cancelByNotification calls up_wait of tag on c's session and cancels it
// with notifications/cancelled, which the upstream must see.
func (h *relayHost) cancelByNotification(t *testing.T, c *client.Client, tag string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"up_wait","arguments":{"tag":%q}}}`, tag)
	req, _ := http.NewRequest(http.MethodPost, h.url+"/mcp", bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(server.HeaderKeySessionID, c.GetSessionId())
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	answered := make(chan string, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		answered <- b.String()
	}()
	h.recorded(t, "started "+tag)
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": "call-1", "reason": "test"}},
	}}
	if err := c.GetTransport().SendNotification(h.ctx(), n); err != nil {
		t.Fatal(err)
	}
	h.recorded(t, "cancelled "+tag)
	<-answered
}
