package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/conformance"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/upstream"
)

// TestRequestProtocolMeta: what each request declares in its _meta, as the
// demo server's whoami reports it. On 2026-07-28 every request carries the
// protocol version, the client's identity and capabilities (an empty
// object is a valid declaration: the server refuses a request without
// one); sampling and elicitation are declared only by a call made with a
// Relay, the only one that can answer them; the caller's own fields stay,
// a protocol field it set itself included; a level set with
// logging/setLevel is declared from then on. On 2025-11-25 nothing of that
// is added: the handshake said it once.
func TestRequestProtocolMeta(t *testing.T) {
	bin := testmcp.Build(t)
	const (
		version = mcp.MetaKeyProtocolVersion
		caps    = mcp.MetaKeyClientCapabilities
		info    = mcp.MetaKeyClientInfo
		level   = mcp.MetaKeyLogLevel
	)
	withRelay := func(ctx context.Context) context.Context { return upstream.WithRelay(ctx, &testRelay{}) }
	noRelay := func(ctx context.Context) context.Context { return ctx }
	tests := []struct {
		name     string
		revision string
		ctx      func(context.Context) context.Context
		meta     map[string]any
		setLevel bool
		want     map[string]string // key → its JSON; "" means absent
	}{
		{"modern, no relay", "2026-07-28", noRelay, nil, false,
			map[string]string{version: `"2026-07-28"`, caps: `{}`, info: `{"name":"antler","version":"9.9"}`, level: ""}},
		{"modern, relay", "2026-07-28", withRelay, nil, false,
			map[string]string{version: `"2026-07-28"`, caps: `{"elicitation":{"form":{}},"sampling":{}}`, info: `{"name":"antler","version":"9.9"}`}},
		{"modern, caller's fields", "2026-07-28", noRelay, map[string]any{"x": 1, info: map[string]any{"name": "mine", "version": "1"}}, false,
			map[string]string{"x": `1`, version: `"2026-07-28"`, caps: `{}`, info: `{"name":"mine","version":"1"}`}},
		{"modern, log level", "2026-07-28", noRelay, nil, true,
			map[string]string{version: `"2026-07-28"`, level: `"warning"`}},
		{"legacy", "2025-11-25", withRelay, map[string]any{"x": 1}, false,
			map[string]string{"x": `1`, version: "", caps: "", info: "", level: ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, &config.Server{Name: "demo", Type: config.TransportStdio, Command: bin, ProtocolVersion: tc.revision},
				upstream.Options{Version: "9.9"})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tc.setLevel {
				if _, err := c.Request(ctx, "logging/setLevel", json.RawMessage(`{"level":"warning"}`)); err != nil {
					t.Fatalf("logging/setLevel: %v", err)
				}
			}
			raw, err := c.CallTool(tc.ctx(ctx), "whoami", json.RawMessage(`{}`), tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				StructuredContent struct {
					Meta map[string]json.RawMessage `json:"meta"`
				} `json:"structuredContent"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatalf("%v: %s", err, raw)
			}
			got := res.StructuredContent.Meta
			for k, want := range tc.want {
				if v, ok := got[k]; want == "" && ok {
					t.Errorf("_meta[%s] = %s, want none", k, v)
				} else if want != "" && string(v) != want {
					t.Errorf("_meta[%s] = %s, want %s", k, v, want)
				}
			}
		})
	}
}

// TestModernCallHeaders: over streamable HTTP a 2026-07-28 tools/call
// carries the standard headers derived from its body (SEP-2243), which
// stdio, having no headers, is spared.
func TestModernCallHeaders(t *testing.T) {
	s := server.NewMCPServer("echo", "1")
	s.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	h := server.NewStreamableHTTPServer(s)
	var mu sync.Mutex
	var seen http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			mu.Lock()
			seen = r.Header.Clone()
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c := dial(t, &config.Server{Name: "echo", Type: config.TransportHTTP, URL: ts.URL + "/mcp", ProtocolVersion: "2026-07-28"}, upstream.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, want := range map[string]string{mcp.HeaderMethod: "tools/call", mcp.HeaderName: "echo", mcp.HeaderProtocolVersion: "2026-07-28"} {
		if got := seen.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

// TestDefaultRevision: with no protocol_version, a stdio server that speaks
// both eras is spoken to in 2025-11-25, the cheaper one per call, unless it
// declares the 2026-07-28 tasks extension (which only that revision has);
// a pin is kept as written, and an HTTP server keeps the newest revision
// (its stateless requests and routing headers). The whoami call shows what
// reached the server: no per-request protocol _meta on 2025-11-25.
func TestDefaultRevision(t *testing.T) {
	demo, tasks := testmcp.Build(t), testmcp.BuildTasks2026(t)
	tests := []struct {
		name string
		srv  config.Server
		want string
	}{
		{"stdio, both eras", config.Server{Type: config.TransportStdio, Command: demo}, "2025-11-25"},
		{"stdio, pinned 2026-07-28", config.Server{Type: config.TransportStdio, Command: demo, ProtocolVersion: "2026-07-28"}, "2026-07-28"},
		{"stdio, pinned 2025-06-18", config.Server{Type: config.TransportStdio, Command: demo, ProtocolVersion: "2025-06-18"}, "2025-06-18"},
		{"stdio, tasks extension", config.Server{Type: config.TransportStdio, Command: tasks, Args: []string{"-state", t.TempDir() + "/jobs.json"}}, "2026-07-28"},
		{"http, both eras", config.Server{Type: config.TransportHTTP, URL: testmcp.StartHTTP(t, "http") + "/mcp"}, "2026-07-28"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.srv.Name = "s"
			c := dial(t, &tc.srv, upstream.Options{})
			if got := c.ProtocolVersion(); got != tc.want {
				t.Fatalf("negotiated %s, want %s", got, tc.want)
			}
			if tc.srv.Command != demo {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			raw, err := c.CallTool(ctx, "whoami", json.RawMessage(`{}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if modern := bytes.Contains(raw, []byte(mcp.MetaKeyProtocolVersion)); modern != mcp.IsModernProtocol(tc.want) {
				t.Errorf("protocol _meta sent: %v on %s: %s", modern, tc.want, raw)
			}
		})
	}
}

// TestCallLogLevel: the log level a tools/call declares in its _meta (how
// 2026-07-28 sets it, per request) is the level the upstream logs at on
// either revision: on 2025-11-25, which has only logging/setLevel, it is
// set first whenever it changes. The conformance fixture's
// test_tool_with_logging sends info messages, which reach the call's relay
// at info and not at error.
func TestCallLogLevel(t *testing.T) {
	bin := conformance.BuildFixture(t)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			c := dial(t, &config.Server{Name: "conf", Type: config.TransportStdio, Command: bin, ProtocolVersion: rev}, upstream.Options{})
			for _, tc := range []struct {
				level string
				logs  bool
			}{{"info", true}, {"error", false}, {"info", true}} {
				r := &testRelay{}
				ctx, cancel := context.WithTimeout(upstream.WithRelay(context.Background(), r), 30*time.Second)
				_, err := c.CallTool(ctx, "test_tool_with_logging", json.RawMessage(`{}`), map[string]any{mcp.MetaKeyLogLevel: tc.level})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				notes, _ := r.seen()
				var logs int
				for _, n := range notes {
					if strings.HasPrefix(n, string(mcp.MethodNotificationMessage)+" ") {
						logs++
					}
				}
				// (The last message may arrive after the result: two are sure.)
				if got := logs >= 2; got != tc.logs || (!tc.logs && logs > 0) {
					t.Errorf("at %s: %d log messages %q", tc.level, logs, notes)
				}
			}
		})
	}
}
