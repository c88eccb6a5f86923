package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// TestIdleTimeoutKeepsAnActiveTasksProcess runs the real host with a short
// stdio idle timeout and a poll interval longer than it, and the reports
// server with its jobs in memory only: the task's process sits idle between
// polls, and the task completes only because its session is pinned by the
// active task in the store.
func TestIdleTimeoutKeepsAnActiveTasksProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	reports := buildInto(t, dir, "./examples/mcpserver/reports", "reports")
	cfg := filepath.Join(dir, "extensions_config.json")
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, "args": ["-state", ""], "task_toolsets": [{"name": "report-generation",
		"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]}}}`, reports)
	yml := "stdio_pool:\n  idle_timeout: 400ms\nmcp_tasks:\n  enabled: true\n  poll_interval_seconds: 3\n"
	settingsFile := filepath.Join(dir, "antler.yaml")
	for path, body := range map[string]string{cfg: doc, settingsFile: yml} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	host := startServe(t, antler, "--config", cfg, "--settings", settingsFile, "--data", filepath.Join(dir, "data"))
	code, res := host.do("POST", "/api/mcp/tools/reports_submit_report/call", `{"arguments": {"topic": "q3", "delay_ms": 4000}, "thread_id": "t1"}`)
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["task_id"].(string)
	if code != 200 || !strings.HasPrefix(id, "mcp-task-") {
		t.Fatalf("submit: %d %v", code, res)
	}
	host.awaitDetail("t1", id, "completed", func(d map[string]any) bool {
		if d["status"] == "failed" {
			t.Fatalf("the task is %v: its idle process was closed under it\n%s", d, host.errb)
		}
		return d["status"] == "completed"
	})
	// With no active task left, the idle process goes.
	eventually.Check(t, "the finished task's process closing", func() (bool, string) {
		_, servers := host.do("GET", "/api/mcp/servers", "")
		return strings.Contains(fmt.Sprint(servers["servers"]), "sessions:0"), fmt.Sprint(servers)
	})
}

// TestMCPEndpointDefaultThread runs the real host with each
// mcp_endpoint.default_thread: two MCP sessions that name no thread run in
// one stdio process under "user" (the one a REST call without thread_id
// runs in), and in two under "session", the default.
func TestMCPEndpointDefaultThread(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	cfg := writeFile(t, "extensions_config.json", fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}}`, testmcp.Build(t)))
	for _, tc := range []struct {
		yml    string
		shared bool
	}{
		{"log_level: warn\n", false},
		{"mcp_endpoint:\n  default_thread: session\n", false},
		{"mcp_endpoint:\n  default_thread: user\n", true},
	} {
		yml := filepath.Join(t.TempDir(), "antler.yaml")
		if err := os.WriteFile(yml, []byte(tc.yml), 0o600); err != nil {
			t.Fatal(err)
		}
		host := startServe(t, antler, "--config", cfg, "--settings", yml, "--data", t.TempDir())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var pids []any
		for range 2 {
			res, err := mcpClient(t, ctx, host.base).CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "demo_whoami"}})
			if err != nil {
				t.Fatal(err)
			}
			sc, _ := res.StructuredContent.(map[string]any)
			pids = append(pids, sc["pid"])
		}
		_, rest := host.do("POST", "/api/mcp/tools/demo_whoami/call", `{"arguments": {}}`)
		sc, _ := rest["structuredContent"].(map[string]any)
		if pids[0] == nil || pids[1] == nil || sc["pid"] == nil {
			t.Fatalf("%q: whoami without a pid: %v, REST %v", tc.yml, pids, rest)
		}
		if shared := pids[0] == pids[1]; shared != tc.shared {
			t.Errorf("%q: two sessions ran in processes %v and %v; shared %v, want %v", tc.yml, pids[0], pids[1], shared, tc.shared)
		}
		if sameAsREST := pids[0] == sc["pid"]; sameAsREST != tc.shared {
			t.Errorf("%q: a session ran in process %v, a REST call without thread_id in %v", tc.yml, pids[0], sc["pid"])
		}
	}
}
