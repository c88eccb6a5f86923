package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/upstream"
)

// profileDirEnv names a folder where BenchmarkProtocolCost has each demo
// server write a CPU profile of its run (<client>-<revision>.pprof).
const profileDirEnv = "ANTLER_BENCH_SERVER_PROFILES"

// benchRevisions are the two revisions whose cost is compared.
var benchRevisions = []string{"2025-11-25", "2026-07-28"}

// BenchmarkProtocolCost isolates what a protocol revision costs per call:
// the demo server's echo over stdio, called by mcp-go's own client and by
// Antler's upstream.Conn (without and with a Relay), each pinned to each
// revision. Beside the client's
// ns/op, B/op and allocs/op it reports the server process's CPU per call
// (server-µs/op, from /proc/<pid>/stat), the benchmark process's own
// (client-µs/op, getrusage) and the bytes of one call each way on the wire
// (req-B and resp-B, from the demo's wire log). /proc counts in clock ticks
// (10 ms), so give it calls enough: -benchtime=20000x.
func BenchmarkProtocolCost(b *testing.B) {
	bin := testmcp.Build(b)
	profiles := os.Getenv(profileDirEnv)
	for _, who := range []string{"mcp-go", "antler", "antler-relay"} {
		for _, rev := range benchRevisions {
			b.Run(who+"/"+rev, func(b *testing.B) {
				wire := filepath.Join(b.TempDir(), "wire.log")
				env := map[string]string{"ANTLER_DEMO_WIRELOG": wire}
				if profiles != "" {
					env["ANTLER_DEMO_CPUPROFILE"] = filepath.Join(profiles, who+"-"+rev+".pprof")
				}
				var call func() error
				var pid int
				if who == "mcp-go" {
					call, pid = mcpgoEcho(b, bin, rev, env)
				} else {
					call, pid = antlerEcho(b, bin, rev, env, who == "antler-relay")
				}
				measureProtocol(b, pid, wire, call)
			})
		}
	}
}

// mcpgoEcho starts the demo with mcp-go's client pinned to rev and returns
// an echo call and the server's pid.
func mcpgoEcho(b *testing.B, bin, rev string, env map[string]string) (func() error, int) {
	cmd := exec.Command(bin)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := client.NewClient(transport.NewIO(stdout, stdin, nil), client.WithProtocolVersion(rev))
	b.Cleanup(func() {
		_ = c.Close() // closes the server's stdin: it exits, writing its profile
		_ = cmd.Wait()
	})
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: rev, ClientInfo: mcp.Implementation{Name: "bench", Version: "1"}}})
	if err != nil {
		b.Fatal(err)
	}
	if res.ProtocolVersion != rev {
		b.Fatalf("negotiated %s, want %s", res.ProtocolVersion, rev)
	}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "benchmark"}}}
	return func() error {
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return err
		}
		if tc, ok := mcp.AsTextContent(res.Content[0]); !ok || tc.Text != "Echo: benchmark" {
			return fmt.Errorf("echo answered %+v", res.Content)
		}
		return nil
	}, cmd.Process.Pid
}

// antlerEcho dials the demo with upstream.Dial, protocol_version rev, and
// returns an echo call and the server's pid. With relay each call carries a
// Relay, as a call from the /mcp door does (a REST call has none), which on
// 2026-07-28 declares sampling and elicitation.
func antlerEcho(b *testing.B, bin, rev string, env map[string]string, relay bool) (func() error, int) {
	c := dial(b, &config.Server{Name: "demo", Type: config.TransportStdio, Command: bin,
		ProtocolVersion: rev, Env: pairs(env)}, upstream.Options{})
	if c.ProtocolVersion() != rev {
		b.Fatalf("negotiated %s, want %s", c.ProtocolVersion(), rev)
	}
	args := json.RawMessage(`{"message":"benchmark"}`)
	ctx := context.Background()
	if relay {
		ctx = upstream.WithRelay(ctx, &testRelay{})
	}
	return func() error {
		raw, err := c.CallTool(ctx, "echo", args, nil)
		if err != nil {
			return err
		}
		if !bytes.Contains(raw, []byte(`Echo: benchmark`)) {
			return fmt.Errorf("echo answered %s", raw)
		}
		return nil
	}, upstream.ChildPID(c)
}

// measureProtocol runs call b.N times after one warm-up call and reports
// the server's and the client's CPU per call and one call's wire bytes.
func measureProtocol(b *testing.B, pid int, wire string, call func() error) {
	if err := call(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	server0 := processCPU(b, pid)
	client0 := selfCPU(b)
	n := 0
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	server := processCPU(b, pid) - server0
	self := selfCPU(b) - client0
	b.ReportMetric(server/1e3/float64(n), "server-µs/op")
	b.ReportMetric(self/1e3/float64(n), "client-µs/op")
	req, resp := wireCall(b, wire)
	b.ReportMetric(float64(len(req)), "req-B")
	b.ReportMetric(float64(len(resp)), "resp-B")
	b.Logf("on the wire:\n> %s\n< %s", req, resp)
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times on Linux.
const clockTick = 10e6 // ns

// processCPU is pid's user plus system time so far in ns, from /proc.
func processCPU(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("server CPU: %v", err)
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("server CPU: %q", data)
	}
	return float64(utime+stime) * clockTick
}

// selfCPU is this process's user plus system time so far in ns.
func selfCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano() + ru.Stime.Nano())
}

// wireCall returns the first tools/call request in the demo's wire log and
// the line the server answered it with (the one with its id).
func wireCall(b *testing.B, path string) (req, resp string) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("wire log: %v", err)
	}
	var id json.RawMessage
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if len(line) < 2 || json.Unmarshal([]byte(line[2:]), &msg) != nil {
			continue
		}
		switch {
		case id == nil && line[0] == '>' && msg.Method == "tools/call":
			req, id = line[2:], msg.ID
		case id != nil && line[0] == '<' && msg.Method == "" && bytes.Equal(msg.ID, id):
			return req, line[2:]
		}
	}
	b.Fatalf("wire log %s holds no tools/call and its answer", path)
	return "", ""
}

// BenchmarkServerHandleMessage is the server half of BenchmarkProtocolCost
// without processes or pipes: mcp-go's MCPServer.HandleMessage (v1.2.1)
// given one echo tools/call as each client writes it on the wire, so its
// B/op and allocs/op are the server's own. The modern variants add the
// 2026-07-28 _meta keys one at a time: protocolVersion and
// clientCapabilities are required on every request, clientInfo is a
// SHOULD.
func BenchmarkServerHandleMessage(b *testing.B) {
	s := server.NewMCPServer("demo", "0.1.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message", mcp.Required())), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
	})
	const (
		args    = `"arguments":{"message":"benchmark"},"name":"echo"`
		version = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
		noCaps  = `"io.modelcontextprotocol/clientCapabilities":{}`
		caps    = `"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{"form":{}}}`
		info    = `"io.modelcontextprotocol/clientInfo":{"name":"antler","version":"0.1.0"}`
	)
	messages := []struct{ name, params string }{
		{"2025-11-25", `{` + args + `}`},
		{"2026-07-28/required", `{"_meta":{` + noCaps + `,` + version + `},` + args + `}`},
		{"2026-07-28/required+clientInfo", `{"_meta":{` + noCaps + `,` + info + `,` + version + `},` + args + `}`},
		{"2026-07-28/required+antlerCaps", `{"_meta":{` + caps + `,` + version + `},` + args + `}`},
		{"2026-07-28/antler", `{"_meta":{` + caps + `,` + info + `,` + version + `},` + args + `}`},
	}
	ctx := context.Background()
	for _, m := range messages {
		b.Run(m.name, func(b *testing.B) {
			msg := json.RawMessage(`{"jsonrpc":"2.0","id":"antler-1","method":"tools/call","params":` + m.params + `}`)
			check := func() {
				out, err := json.Marshal(s.HandleMessage(ctx, msg))
				if err != nil || !bytes.Contains(out, []byte("Echo: benchmark")) {
					b.Fatalf("answered %s, %v", out, err)
				}
				b.ReportMetric(float64(len(msg)), "req-B")
				b.ReportMetric(float64(len(out)), "resp-B")
			}
			check()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(s.HandleMessage(ctx, msg)); err != nil {
					b.Fatal(err)
				}
			}
			check()
		})
	}
}
