package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/eventually"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// rpcResult is the result member of a JSON-RPC response, as bytes.
func rpcResult(t *testing.T, body []byte) json.RawMessage {
	t.Helper()
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.Result == nil {
		t.Fatalf("no JSON-RPC result in %s (%v)", body, err)
	}
	return msg.Result
}

// session opens a raw streamable session on /mcp with key (none: no
// Authorization) and returns the headers its requests carry.
func (h *host) session(version, key string) map[string]string {
	h.t.Helper()
	hdr := map[string]string{}
	if key != "" {
		hdr["Authorization"] = "Bearer " + key
	}
	resp, _ := h.rawPost(hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, version))
	sid := resp.Header.Get(server.HeaderKeySessionID)
	if sid == "" {
		h.t.Fatalf("initialize: %d, no session id", resp.StatusCode)
	}
	hdr[server.HeaderKeySessionID], hdr[mcp.HeaderProtocolVersion] = sid, version
	h.rawPost(hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return hdr
}

// upstreamResult calls tool on the demo's streamable-HTTP upstream
// directly and returns its result bytes: what the door must relay.
func (h *host) upstreamResult(version, tool, args string) json.RawMessage {
	h.t.Helper()
	post := func(hdr map[string]string, msg string) (*http.Response, []byte) { return h.postTo(h.httpURL, hdr, msg) }
	resp, _ := post(nil, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, version))
	hdr := map[string]string{server.HeaderKeySessionID: resp.Header.Get(server.HeaderKeySessionID), mcp.HeaderProtocolVersion: version}
	post(hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp, b := post(hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args))
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		h.t.Fatalf("upstream answered %q: %s", ct, b)
	}
	return rpcResult(h.t, b)
}

// TestPlainCallIsTheUpstreamsBytes: a plain tools/call of a session is
// answered as application/json whose result is the upstream's result byte
// for byte (the door passes it through), for a text result and one with
// structuredContent, on every session revision; the same call with a
// progress token, which mcp-go answers, carries the same result.
func TestPlainCallIsTheUpstreamsBytes(t *testing.T) {
	h := newHost(t)
	for _, version := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		for _, tc := range []struct{ tool, args string }{
			{"echo", `{"message":"bytes"}`},
			{"add", `{"a":1.5,"b":2}`},
			{"fail", `{"message":"nope"}`},
		} {
			t.Run(version+"/"+tc.tool, func(t *testing.T) {
				want := h.upstreamResult(version, tc.tool, tc.args)
				hdr := h.session(version, "")
				resp, body := h.rawPost(hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"http_%s","arguments":%s}}`, tc.tool, tc.args))
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want application/json", ct)
				}
				if got := rpcResult(t, body); !bytes.Equal(got, want) {
					t.Errorf("result\n got %s\nwant %s (the upstream's)", got, want)
				}
				if !bytes.HasPrefix(body, []byte(`{"jsonrpc":"2.0","id":"c-1","result":`)) {
					t.Errorf("envelope: %s", body)
				}
				// mcp-go's answer (a progress token takes its path) decodes
				// to the same result.
				_, slow := h.rawPost(hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":"c-2","method":"tools/call","params":{"name":"http_%s","arguments":%s,"_meta":{"progressToken":"p"}}}`, tc.tool, tc.args))
				var a, b any
				_ = json.Unmarshal(rpcResult(t, body), &a)
				_ = json.Unmarshal(rpcResult(t, slow), &b)
				if fmt.Sprint(a) != fmt.Sprint(b) {
					t.Errorf("the door's result %v, mcp-go's %v", a, b)
				}
			})
		}
	}
}

// TestForeignSessionCallIsRefused: a tools/call naming another caller's
// session, or an unknown one, is 404 as before the door answered calls.
func TestForeignSessionCallIsRefused(t *testing.T) {
	h := newHost(t, settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent}, settings.Key{Key: "kb", User: "bob", Role: settings.RoleAgent})
	alice := h.session("2025-11-25", "ka")
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stdio_echo","arguments":{"message":"hi"}}}`
	if resp, body := h.rawPost(alice, call); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Echo: hi") {
		t.Fatalf("the owner's call: %d %s", resp.StatusCode, body)
	}
	for name, hdr := range map[string]map[string]string{
		"foreign": {"Authorization": "Bearer kb", server.HeaderKeySessionID: alice[server.HeaderKeySessionID], mcp.HeaderProtocolVersion: "2025-11-25"},
		"unknown": {"Authorization": "Bearer ka", server.HeaderKeySessionID: "0123456789abcdef0123456789abcdef", mcp.HeaderProtocolVersion: "2025-11-25"},
	} {
		resp, body := h.rawPost(hdr, call)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "Session not found") || strings.Contains(string(body), "Echo") {
			t.Errorf("%s session: %d %s, want 404 Session not found", name, resp.StatusCode, body)
		}
	}
	bad := map[string]string{"Authorization": "Bearer ka", server.HeaderKeySessionID: alice[server.HeaderKeySessionID], mcp.HeaderProtocolVersion: "1999-01-01"}
	if resp, body := h.rawPost(bad, call); resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "Echo") {
		t.Errorf("unsupported version header: %d %s, want mcp-go's 400", resp.StatusCode, body)
	}
}

// TestStatelessCallIsAnsweredAsJSON: a 2026-07-28 tools/call (no session)
// is answered as application/json with the resultType and serverInfo
// mcp-go gives such a result, the content the upstream's; one that breaks
// the header rules is still refused.
func TestStatelessCallIsAnsweredAsJSON(t *testing.T) {
	h := newHost(t)
	const v = "2026-07-28"
	hdr := map[string]string{mcp.HeaderProtocolVersion: v, mcp.HeaderMethod: "tools/call", mcp.HeaderName: "http_echo"}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	resp, body := h.rawPost(hdr, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"http_echo","arguments":{"message":"modern"},`+meta+`}}`)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/json" {
		t.Fatalf("%d %q: %s", resp.StatusCode, ct, body)
	}
	var res struct {
		ResultType string          `json:"resultType"`
		Content    json.RawMessage `json:"content"`
		Meta       map[string]struct {
			Name string `json:"name"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(rpcResult(t, body), &res); err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"Echo: modern"}]`
	if res.ResultType != "complete" || res.Meta[mcp.MetaKeyServerInfo].Name != "antler" || string(res.Content) != want {
		t.Errorf("result %s, want resultType complete, Antler's serverInfo and content %s", rpcResult(t, body), want)
	}
	// mcp-go's answer of the same call (a declared log level takes its
	// path) is the same result.
	slowMeta := strings.Replace(meta, `"_meta":{`, `"_meta":{"io.modelcontextprotocol/logLevel":"error",`, 1)
	_, slow := h.rawPost(hdr, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"http_echo","arguments":{"message":"modern"},`+slowMeta+`}}`)
	var a, b any
	_ = json.Unmarshal(rpcResult(t, body), &a)
	_ = json.Unmarshal(rpcResult(t, slow), &b)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the door's result %v, mcp-go's %v", a, b)
	}
	mismatch := map[string]string{mcp.HeaderProtocolVersion: v, mcp.HeaderMethod: "tools/list", mcp.HeaderName: "http_echo"}
	if resp, body := h.rawPost(mismatch, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"http_echo","arguments":{"message":"x"},`+meta+`}}`); resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "Echo") {
		t.Errorf("Mcp-Method mismatch: %d %s, want 400", resp.StatusCode, body)
	}
}

// TestProgressCallStillStreams: a call with a progress token is mcp-go's:
// its answer is an SSE stream carrying the upstream's progress, with the
// caller's token, before the result.
func TestProgressCallStillStreams(t *testing.T) {
	h := newRelayHost(t)
	c, _ := h.relayClient(t, "2025-11-25", false, false)
	const tag = "streamed"
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"p-1","method":"tools/call","params":{"name":"up_wait","arguments":{"tag":%q},"_meta":{"progressToken":%q}}}`, tag, tag)
	req, _ := http.NewRequestWithContext(h.ctx(), http.MethodPost, h.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(server.HeaderKeySessionID, c.GetSessionId())
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q, want an SSE stream", ct)
	}
	ctx, cancel := context.WithCancel(h.ctx())
	defer cancel()
	progressed := false
	for ev := range sseEvents(ctx, resp.Body) {
		switch {
		case strings.Contains(ev.data, string(mcp.MethodNotificationProgress)):
			if !strings.Contains(ev.data, `"progressToken":"`+tag+`"`) {
				t.Errorf("progress without the caller's token: %s", ev.data)
			}
			progressed = true
			h.release(t, tag)
		case strings.Contains(ev.data, `"id":"p-1"`):
			if !progressed {
				t.Errorf("the result came before any progress: %s", ev.data)
			}
			if !strings.Contains(ev.data, "released "+tag) {
				t.Errorf("result %s", ev.data)
			}
			return
		}
	}
	t.Fatal("the stream ended without the result")
}

// oddResult is what the hand-written upstream answers every tools/call
// with: the fields in an unusual order and spacing, and one MCP does not
// define. mcp-go's path would decode and re-encode it
// ({"content":[{"type":"text","text":"odd"}]}); the door relays it as is.
const oddResult = `{"isError":false,  "content":[{"text":"odd","type":"text"}],"x-extra":{"k":1}}`

// metaResult is the upstream's answer to its meta tool: a 2026-07-28
// server's result, with its own resultType and serverInfo beside a key of
// its own.
const metaResult = `{"content":[{"type":"text","text":"m"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"odd","version":"1"},"k":"v"}}`

// oddUpstream is a minimal streamable-HTTP MCP server written by hand, so
// its result bytes are not mcp-go's.
func oddUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
			} `json:"params"`
		}
		if json.NewDecoder(r.Body).Decode(&msg) != nil || msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch msg.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"odd","version":"1"}}`, msg.Params.ProtocolVersion)
		case "tools/list":
			result = `{"tools":[{"name":"tool","inputSchema":{"type":"object"}},{"name":"meta","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			result = oddResult
			if msg.Params.Name == "meta" {
				result = metaResult
			}
		case "ping":
			result = `{}`
		}
		w.Header().Set("Content-Type", "application/json")
		if result == "" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPlainCallRelaysTheUpstreamsBytes: the result of a plain call is the
// upstream's bytes, not mcp-go's re-encoding of them.
func TestPlainCallRelaysTheUpstreamsBytes(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"odd": {"type": "http", "url": %q}}}`, oddUpstream(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	gw := testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	h := &host{t: t, url: srv.URL}
	hdr := h.session("2025-11-25", "")
	resp, body := h.rawPost(hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"odd_tool","arguments":{}}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if want := `{"jsonrpc":"2.0","id":3,"result":` + oddResult + "}\n"; string(body) != want {
		t.Errorf("answer\n got %s\nwant %s", body, want)
	}
	// The upstream's resultType and serverInfo are its own: a session's
	// result has neither, a 2026-07-28 result Antler's; its other _meta
	// keys stay.
	_, body = h.rawPost(hdr, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"odd_meta","arguments":{}}}`)
	if got, want := string(rpcResult(t, body)), `{"_meta":{"k":"v"},"content":[{"type":"text","text":"m"}]}`; got != want {
		t.Errorf("session result\n got %s\nwant %s", got, want)
	}
	modern := map[string]string{mcp.HeaderProtocolVersion: "2026-07-28", mcp.HeaderMethod: "tools/call", mcp.HeaderName: "odd_meta"}
	_, body = h.rawPost(modern, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"odd_meta","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if got, want := string(rpcResult(t, body)), `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"antler","version":"test"},"k":"v"},"content":[{"type":"text","text":"m"}],"resultType":"complete"}`; got != want {
		t.Errorf("2026-07-28 result\n got %s\nwant %s", got, want)
	}
}

// TestQueuedNotificationTakesMCPGosStream: when the tool set changes, the
// session's notifications/tools/list_changed goes out on a call's stream
// (mcp-go's: the door leaves a call with notifications queued for its
// session to it), and the session's plain calls are JSON again afterwards,
// where mcp-go would have kept upgrading them to SSE.
func TestQueuedNotificationTakesMCPGosStream(t *testing.T) {
	h := newHost(t)
	hdr := h.session("2025-11-25", "")
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stdio_echo","arguments":{"message":"hi"}}}`
	answer := func() string {
		t.Helper()
		resp, body := h.rawPost(hdr, call)
		if !strings.Contains(string(body), "Echo: hi") {
			t.Fatalf("no result: %s", body)
		}
		return resp.Header.Get("Content-Type")
	}
	if ct := answer(); ct != "application/json" {
		t.Fatalf("before the change: %q", ct)
	}
	h.writeConfig("extra")
	eventually.True(t, "a call streamed with the change", func() bool { return strings.HasPrefix(answer(), "text/event-stream") })
	eventually.True(t, "a plain call answered as JSON again", func() bool { return answer() == "application/json" })
}

// TestForeignCancelLeavesTheCallRunning performs the attack: bob sends
// notifications/cancelled naming alice's session and her call's id, with a
// 2026-07-28 version header (whose requests skip the session check at the
// door). Alice's call must run on and answer; the upstream must never see
// it cancelled.
func TestForeignCancelLeavesTheCallRunning(t *testing.T) {
	h := newRelayHost(t, settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent}, settings.Key{Key: "kb", User: "bob", Role: settings.RoleAgent})
	alice := h.session("2025-11-25", "ka")
	answered := make(chan string, 1)
	go func() {
		_, body := h.rawPost(alice, `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"up_wait","arguments":{"tag":"victim"}}}`)
		answered <- string(body)
	}()
	h.recorded(t, "started victim")
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		bob := map[string]string{"Authorization": "Bearer kb", server.HeaderKeySessionID: alice[server.HeaderKeySessionID], mcp.HeaderProtocolVersion: version}
		h.rawPost(bob, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-1","reason":"attack"}}`)
	}
	h.release(t, "victim")
	h.recorded(t, "released victim")
	body := <-answered
	if b, _ := os.ReadFile(h.record); strings.Contains(string(b), "cancelled victim") {
		t.Fatalf("another user's notifications/cancelled cancelled the call: record %q, answer %s", b, body)
	}
	if strings.Contains(body, `"error"`) || strings.Contains(body, `"isError":true`) {
		t.Errorf("the owner's call failed: %s", body)
	}
}
