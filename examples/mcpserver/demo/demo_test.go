package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/testmcp"
)

// wantTools are the built-in tools, sorted by name as tools/list returns them.
var wantTools = []string{"add", "echo", "exit", "fail", "schema_probe", "sleep", "whoami", "write_file"}

// testTimeout bounds every exchange with a server, so a hang fails the test
// instead of stalling the whole run.
const testTimeout = 30 * time.Second

// connectFunc starts a client for one transport. headers are sent with every
// HTTP request; the stdio connector ignores them.
type connectFunc func(t *testing.T, headers map[string]string) *client.Client

// transports returns a connector for each transport the demo server speaks.
// The HTTP servers are shared by every client of the calling test.
func transports(t *testing.T) map[string]connectFunc {
	t.Helper()
	bin := testmcp.Build(t)
	httpBase := testmcp.StartHTTP(t, "http")
	sseBase := testmcp.StartHTTP(t, "sse")

	return map[string]connectFunc{
		"stdio": func(t *testing.T, _ map[string]string) *client.Client {
			t.Helper()
			c, err := client.NewStdioMCPClient(bin, []string{"ANTLER_DEMO_PROBE=stdio"}, "-name", "demo-stdio")
			if err != nil {
				t.Fatalf("start stdio client: %v", err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		},
		"http": func(t *testing.T, headers map[string]string) *client.Client {
			t.Helper()
			c, err := client.NewStreamableHttpClient(httpBase+"/mcp", transport.WithHTTPHeaders(headers))
			if err != nil {
				t.Fatalf("create streamable HTTP client: %v", err)
			}
			return started(t, c)
		},
		"sse": func(t *testing.T, headers map[string]string) *client.Client {
			t.Helper()
			c, err := client.NewSSEMCPClient(sseBase+"/sse", client.WithHeaders(headers))
			if err != nil {
				t.Fatalf("create SSE client: %v", err)
			}
			return started(t, c)
		},
	}
}

// started starts c and closes it when the test ends. The SSE transport ties
// its event stream to the context given to Start, so that context must live
// as long as the client, not just as long as the call.
func started(t *testing.T, c *client.Client) *client.Client {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// initialize performs the handshake, asking for version (empty means the
// client's default, which is the newest version).
func initialize(t *testing.T, c *client.Client, version string) *mcp.InitializeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: "demo-test", Version: "1.0.0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize (version %q): %v", version, err)
	}
	return res
}

// call invokes a tool and fails the test on a protocol-level error.
func call(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// text returns the concatenated text content of a tool result.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, content := range res.Content {
		if tc, ok := mcp.AsTextContent(content); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// decodeStructured re-decodes a result's structuredContent into v.
func decodeStructured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("marshal structuredContent: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode structuredContent %s: %v", raw, err)
	}
}

func TestTransports(t *testing.T) {
	for name, connect := range transports(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := connect(t, nil)

			res := initialize(t, c, "")
			if res.Capabilities.Tools == nil {
				t.Errorf("server does not advertise the tools capability")
			}
			wantName := "demo"
			if name == "stdio" {
				wantName = "demo-stdio"
			}
			if res.ServerInfo.Name != wantName {
				t.Errorf("server name = %q, want %q", res.ServerInfo.Name, wantName)
			}

			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("list tools: %v", err)
			}
			var got []string
			for _, tool := range list.Tools {
				got = append(got, tool.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, wantTools) {
				t.Errorf("tools = %v, want %v", got, wantTools)
			}

			if got, want := text(call(t, c, "echo", map[string]any{"message": "hi"})), "Echo: hi"; got != want {
				t.Errorf("echo text = %q, want %q", got, want)
			}

			add := call(t, c, "add", map[string]any{"a": 2, "b": 3.5})
			if got, want := text(add), "The sum of 2 and 3.5 is 5.5."; got != want {
				t.Errorf("add text = %q, want %q", got, want)
			}
			var sum struct {
				Sum *float64 `json:"sum"`
			}
			decodeStructured(t, add, &sum)
			if sum.Sum == nil || *sum.Sum != 5.5 {
				t.Errorf("add structuredContent = %v, want {\"sum\": 5.5}", add.StructuredContent)
			}

			fail := call(t, c, "fail", map[string]any{"message": "boom"})
			if !fail.IsError || text(fail) != "boom" {
				t.Errorf("fail = {isError: %v, text: %q}, want {isError: true, text: \"boom\"}", fail.IsError, text(fail))
			}
		})
	}
}

// TestProtocolVersions checks that every transport serves clients pinned to
// each protocol version mcp-go knows, legacy handshake and stateless alike.
func TestProtocolVersions(t *testing.T) {
	for name, connect := range transports(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, version := range mcp.ValidProtocolVersions {
				t.Run(version, func(t *testing.T) {
					c := connect(t, nil)
					initialize(t, c, version)
					if got := c.ProtocolVersion(); got != version {
						t.Errorf("negotiated protocol version %q, want %q", got, version)
					}
					if got, want := text(call(t, c, "echo", map[string]any{"message": version})), "Echo: "+version; got != want {
						t.Errorf("echo text = %q, want %q", got, want)
					}
				})
			}
		})
	}
}

// whoami is the structured result of the whoami tool.
type whoami struct {
	PID     int               `json:"pid"`
	CWD     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Headers map[string]string `json:"headers"`
	Meta    map[string]any    `json:"meta"`
}

func TestWhoami(t *testing.T) {
	conns := transports(t)

	for _, name := range []string{"http", "sse"} {
		t.Run(name+" headers", func(t *testing.T) {
			t.Parallel()
			c := conns[name](t, map[string]string{"X-Demo": "1"})
			initialize(t, c, "")
			var id whoami
			decodeStructured(t, call(t, c, "whoami", nil), &id)
			if got := id.Headers["x-demo"]; got != "1" {
				t.Errorf("headers[x-demo] = %q, want \"1\" (headers: %v)", got, id.Headers)
			}
			if id.PID == 0 || id.CWD == "" {
				t.Errorf("whoami lacks pid or cwd: %+v", id)
			}
		})
	}

	t.Run("stdio env", func(t *testing.T) {
		t.Parallel()
		c := conns["stdio"](t, nil)
		initialize(t, c, mcp.ProtocolVersion20250618)
		res := call(t, c, "whoami", nil)
		var id whoami
		decodeStructured(t, res, &id)
		if got := id.Env["ANTLER_DEMO_PROBE"]; got != "stdio" {
			t.Errorf("env[ANTLER_DEMO_PROBE] = %q, want \"stdio\" (env: %v)", got, id.Env)
		}
		if id.Headers == nil || len(id.Headers) != 0 {
			t.Errorf("headers = %v, want an empty object on stdio", id.Headers)
		}
		if id.Meta != nil {
			t.Errorf("meta = %v, want null for a call without _meta", id.Meta)
		}
		var fromText whoami
		if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil || fromText.PID != id.PID {
			t.Errorf("text content is not the JSON of the structured result: %q (%v)", text(res), err)
		}
	})
}

// TestSleepCancel checks that a cancelled call ends the sleep early and that
// the server keeps serving afterwards.
func TestSleepCancel(t *testing.T) {
	c := transports(t)["http"](t, nil)
	initialize(t, c, "")

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "sleep"
	req.Params.Arguments = map[string]any{"ms": 60_000}
	start := time.Now()
	if _, err := c.CallTool(ctx, req); err == nil {
		t.Fatalf("sleep 60s returned without error despite a 200ms deadline")
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("cancelled sleep took %s", elapsed)
	}
	if got, want := text(call(t, c, "sleep", map[string]any{"ms": 1})), "slept 1ms"; got != want {
		t.Errorf("sleep text = %q, want %q", got, want)
	}
}

// TestInitDelay checks that -init-delay holds back both the legacy
// initialize request and the 2026-07-28 server/discover probe.
func TestInitDelay(t *testing.T) {
	const delay = 300 * time.Millisecond
	base := testmcp.StartHTTP(t, "http", "-init-delay", delay.String())
	for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20250618} {
		t.Run(version, func(t *testing.T) {
			c, err := client.NewStreamableHttpClient(base + "/mcp")
			if err != nil {
				t.Fatalf("create client: %v", err)
			}
			started(t, c)
			start := time.Now()
			initialize(t, c, version)
			if elapsed := time.Since(start); elapsed < delay {
				t.Errorf("handshake answered after %s, want at least %s", elapsed, delay)
			}
		})
	}
}

// stdioIn starts a stdio client whose server runs in dir.
func stdioIn(t *testing.T, dir string) *client.Client {
	t.Helper()
	bin := testmcp.Build(t)
	inDir := func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, command, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = dir
		return cmd, nil
	}
	c, err := client.NewStdioMCPClientWithOptions(bin, nil, nil, transport.WithCommandFunc(inDir))
	if err != nil {
		t.Fatalf("start stdio client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	initialize(t, c, "")
	return c
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	c := stdioIn(t, dir)
	res := call(t, c, "write_file", map[string]any{"path": "sub/dir/out.txt", "content": "hello"})
	want := filepath.Join(dir, "sub", "dir", "out.txt")
	if res.IsError || !samePath(text(res), want) {
		t.Fatalf("write_file = {isError: %v, text: %q}, want text %q", res.IsError, text(res), want)
	}
	if data, err := os.ReadFile(want); err != nil || string(data) != "hello" {
		t.Errorf("file %s holds %q (%v), want \"hello\"", want, data, err)
	}
}

// samePath reports whether a and b name the same file, allowing for
// symlinked temp dirs such as /var on macOS.
func samePath(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return a == b || (errA == nil && errB == nil && ra == rb)
}

// TestExit checks that the exit tool ends the server without an answer, so
// the pending call fails rather than succeeding.
func TestExit(t *testing.T) {
	c := stdioIn(t, t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "exit"
	req.Params.Arguments = map[string]any{"code": 3}
	start := time.Now()
	res, err := c.CallTool(ctx, req)
	if err == nil {
		t.Fatalf("exit answered %+v, want the call to fail", res)
	}
	t.Logf("exit call failed after %s: %v", time.Since(start), err)
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-transport", "sse", "-tools", " x, y,,x "}, &strings.Builder{})
	if err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	if cfg.transport != "sse" || cfg.listen != "127.0.0.1:0" || cfg.name != "demo" || !slices.Equal(cfg.extraTools, []string{"x", "y"}) {
		t.Errorf("parseFlags = %+v", cfg)
	}
	for _, args := range [][]string{
		{"-transport", "ws"},
		{"-tools", "echo"},
		{"-init-delay", "-1s"},
		{"extra"},
	} {
		if _, err := parseFlags(args, &strings.Builder{}); err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", args)
		}
	}
}

// TestDiagnostics: with ANTLER_DEMO_WIRELOG the first protocol lines of
// both directions are logged in order, and with ANTLER_DEMO_CPUPROFILE a
// profile is written when the server stops.
func TestDiagnostics(t *testing.T) {
	dir := t.TempDir()
	wire, profile := filepath.Join(dir, "wire.log"), filepath.Join(dir, "cpu.pprof")
	c, err := client.NewStdioMCPClient(testmcp.Build(t), []string{envWireLog + "=" + wire, envCPUProfile + "=" + profile})
	if err != nil {
		t.Fatal(err)
	}
	initialize(t, c, "2025-11-25")
	call(t, c, "echo", map[string]any{"message": "logged"})
	if err := c.Close(); err != nil { // waits for the server to exit
		t.Fatal(err)
	}
	data, err := os.ReadFile(wire)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for line := range strings.Lines(string(data)) {
		dirs = append(dirs, line[:1])
	}
	// initialize, its answer, notifications/initialized, the call, its answer.
	if want := []string{">", "<", ">", ">", "<"}; !slices.Equal(dirs, want) {
		t.Errorf("wire log directions %q, want %q:\n%s", dirs, want, data)
	}
	if !strings.Contains(string(data), `"text":"Echo: logged"`) {
		t.Errorf("wire log has no echo answer:\n%s", data)
	}
	if fi, err := os.Stat(profile); err != nil || fi.Size() == 0 {
		t.Errorf("CPU profile: %v (%v)", err, fi)
	}
}
