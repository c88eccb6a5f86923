package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/testmcp"
)

// serveBinary is a running `antler serve` built from source.
type serveBinary struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	errb *bytes.Buffer
}

func buildInto(t *testing.T, dir, pkg, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = testmcp.RepoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func startServe(t *testing.T, antler string, args ...string) *serveBinary {
	t.Helper()
	cmd := exec.Command(antler, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	errb := &bytes.Buffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	base := ""
	for base == "" && sc.Scan() {
		if m := regexp.MustCompile(`serving \d+ tools on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
	}
	go io.Copy(io.Discard, stdout)
	if base == "" {
		_ = cmd.Wait()
		t.Fatalf("serve did not start:\n%s", errb)
	}
	return &serveBinary{t: t, cmd: cmd, base: base, errb: errb}
}

func (s *serveBinary) do(method, path, body string) (int, map[string]any) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestDurableReportSurvivesAHostCrash submits a report through the gateway,
// kills the host with SIGKILL while it is being polled, restarts it on the
// same SQLite file, and sees the task complete.
func TestDurableReportSurvivesAHostCrash(t *testing.T) {
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	reports := buildInto(t, dir, "./examples/mcpserver/reports", "reports")
	cfg := filepath.Join(dir, "extensions_config.json")
	state := filepath.Join(dir, "reports-state.json")
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, "args": ["-state", %q], "task_toolsets": [{"name": "report-generation",
		"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]}}}`, reports, state)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	settingsFile := filepath.Join(dir, "antler.yaml")
	if err := os.WriteFile(settingsFile, []byte("mcp_tasks:\n  enabled: true\n  poll_interval_seconds: 1\n  lease_seconds: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	args := []string{"--config", cfg, "--settings", settingsFile, "--data", data}

	// Without the runtime, task toolsets refuse to start.
	var out, errb bytes.Buffer
	if code := run([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data", data}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "mcp_tasks.enabled=true is required") {
		t.Fatalf("serve with toolsets and no runtime: exit %d, %s", code, &errb)
	}

	host := startServe(t, antler, args...)
	code, list := host.do("GET", "/api/mcp/tools", "")
	var names []string
	tools, _ := list["tools"].([]any)
	for _, tool := range tools {
		names = append(names, fmt.Sprint(tool.(map[string]any)["name"]))
	}
	got := strings.Join(names, " ")
	if code != 200 || strings.Contains(got, "get_report_status") || strings.Contains(got, "cancel_report") ||
		!strings.Contains(got, "reports_submit_report") || !strings.Contains(got, "list_background_tasks") {
		t.Fatalf("tools: %d %s", code, got)
	}
	code, res := host.do("POST", "/api/mcp/tools/reports_submit_report/call", `{"arguments": {"topic": "q3", "delay_ms": 4000}, "thread_id": "t1"}`)
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["task_id"].(string)
	if code != 200 || !strings.HasPrefix(id, "mcp-task-") {
		t.Fatalf("submit: %d %v", code, res)
	}
	if _, detail := host.do("GET", "/api/threads/t1/mcp-tasks/"+id, ""); detail["remote_task_id"] != nil || detail["server_name"] != nil {
		t.Errorf("task detail exposes remote internals: %v", detail)
	}
	if code, _ := host.do("GET", "/api/threads/t2/mcp-tasks/"+id, ""); code != 404 {
		t.Errorf("another thread's task: %d, want 404", code)
	}
	time.Sleep(1500 * time.Millisecond) // at least one poll happened
	_ = host.cmd.Process.Signal(syscall.SIGKILL)
	_ = host.cmd.Wait()

	again := startServe(t, antler, args...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, detail := again.do("GET", "/api/threads/t1/mcp-tasks/"+id, "")
		if detail["status"] == "completed" {
			if detail["result"] == nil {
				t.Error("completed without a result")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the crash the task is %v\n%s", detail, again.errb)
		}
		time.Sleep(300 * time.Millisecond)
	}
	_, tasks := again.do("POST", "/api/mcp/tools/list_background_tasks/call", `{"thread_id": "t1"}`)
	if !strings.Contains(fmt.Sprint(tasks["structuredContent"]), "report-generation") {
		t.Errorf("list_background_tasks: %v", tasks)
	}
}
