package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/taskstore/storetest"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
)

// serveBinary is a running `antler serve` built from source.
type serveBinary struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	errb *stderrBuffer
}

// stderrBuffer is a served process's stderr: written by exec's copying
// goroutine while the test reads it (in a wait's progress message).
type stderrBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *stderrBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *stderrBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
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

// reportsHost is a built antler and reports server in a test folder: the
// reports server configured with toolset (testtask.ReportsToolset or
// ReportsAnswerToolset), mcp_tasks on (polling every second, 5 s leases),
// and events delivered to hook when it is set. args are serve's.
type reportsHost struct {
	dir, antler, cfg, data string
	args                   []string
}

func newReportsHost(t *testing.T, toolset string, hook *hookReceiver) reportsHost {
	t.Helper()
	h := reportsHost{dir: t.TempDir()}
	h.antler = buildInto(t, h.dir, "./host/cmd/antler", "antler")
	reports := buildInto(t, h.dir, "./examples/mcpserver/reports", "reports")
	h.cfg, h.data = filepath.Join(h.dir, "extensions_config.json"), filepath.Join(h.dir, "data")
	if err := os.WriteFile(h.cfg, []byte(fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, %s}}}`, reports, toolset)), 0o600); err != nil {
		t.Fatal(err)
	}
	yml := "mcp_tasks:\n  enabled: true\n  poll_interval_seconds: 1\n  lease_seconds: 5\n"
	if hook != nil {
		yml += fmt.Sprintf("  notifications:\n    webhook_url: %s/hook\n    webhook_secret: %s\n", hook.srv.URL, hookSecret)
	}
	settingsFile := filepath.Join(h.dir, "antler.yaml")
	if err := os.WriteFile(settingsFile, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	h.args = []string{"--config", h.cfg, "--settings", settingsFile, "--data", h.data}
	return h
}

func startServe(t *testing.T, antler string, args ...string) *serveBinary {
	t.Helper()
	cmd := exec.Command(antler, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	errb := &stderrBuffer{}
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
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// awaitDetail polls the task API of s until the detail of task id in
// thread satisfies ok, and returns that detail; what says what was awaited
// and a failure shows the last detail and the host's log.
func (s *serveBinary) awaitDetail(thread, id, what string, ok func(detail map[string]any) bool) map[string]any {
	s.t.Helper()
	var d map[string]any
	eventually.Check(s.t, fmt.Sprintf("task %s in %s: %s", id, thread, what), func() (bool, string) {
		code, got := s.do("GET", "/api/threads/"+thread+"/mcp-tasks/"+id, "")
		d = got
		return code == 200 && ok(got), fmt.Sprintf("%d %v\n%s", code, got, s.errb)
	})
	return d
}

// completedAndDelivered reports whether the task completed and its
// notification was delivered.
func completedAndDelivered(d map[string]any) bool {
	return d["status"] == "completed" && d["notification_status"] == "delivered"
}

// polled reports whether the runtime has polled the task at least once.
func polled(d map[string]any) bool { return d["last_polled_at"] != nil }

// TestDurableReportSurvivesAHostCrash submits a report through the gateway,
// kills the host with SIGKILL while it is being polled, restarts it on the
// same SQLite file, and sees the task complete. The reports server runs as
// configured in the quick start, without -state: its pooled stdio child
// keeps the jobs in its thread workspace, and the restarted host's new
// child in that workspace resumes them.
func TestDurableReportSurvivesAHostCrash(t *testing.T) {
	hook := newHookReceiver(t)
	rh := newReportsHost(t, testtask.ReportsToolset, hook)
	antler, cfg, data, args := rh.antler, rh.cfg, rh.data, rh.args

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
	host.awaitDetail("t1", id, "a first poll", polled) // the crash comes while the task is tracked
	state := filepath.Join(data, "users", "default", "threads", "t1", "user-data", "workspace", ".reports", "reports.json")
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("the reports child keeps no jobs in its thread workspace: %v", err)
	}
	_ = host.cmd.Process.Signal(syscall.SIGKILL)
	_ = host.cmd.Wait()

	again := startServe(t, antler, args...)
	// A live consumer that resumes from the beginning of the thread.
	events := openEventStream(t, again.base+"/api/threads/t1/mcp-tasks/events", "0")
	if detail := again.awaitDetail("t1", id, "completed after the crash", func(d map[string]any) bool { return d["status"] == "completed" }); detail["result"] == nil {
		t.Error("completed without a result")
	}
	_, tasks := again.do("POST", "/api/mcp/tools/list_background_tasks/call", `{"thread_id": "t1"}`)
	if !strings.Contains(fmt.Sprint(tasks["structuredContent"]), "report-generation") {
		t.Errorf("list_background_tasks: %v", tasks)
	}

	// The completion is delivered to the webhook once, and streamed.
	env := events.next(t, 15*time.Second)
	if env.TaskID != id || env.ThreadID != "t1" || !strings.Contains(string(env.Event), `"status":"completed"`) ||
		!strings.HasPrefix(env.EventText, "<untrusted_mcp_task_event>") {
		t.Errorf("streamed event: %+v", env)
	}
	awaitNotified(t, again, "t1", id)
	gotHooks := hook.deliveries()
	if len(gotHooks) != 1 || gotHooks[0].TaskID != id || gotHooks[0].UserID != "default" || gotHooks[0].IdempotencyKey != "mcp-task:"+id+":1:0" ||
		!strings.Contains(string(gotHooks[0].Event), `"status":"completed"`) {
		t.Errorf("webhook deliveries: %+v", gotHooks)
	}
}

const hookSecret = "whsec-e2e-canary"

// hookReceiver is a real webhook endpoint in the test process; it verifies
// each delivery's signature and records its envelope.
type hookReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []tasknotify.Envelope
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := tasknotify.Verify([]byte(hookSecret), r.Header.Get(tasknotify.HeaderSignature), body, time.Now(), time.Minute); err != nil {
			t.Errorf("webhook delivery: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var env tasknotify.Envelope
		if err := json.Unmarshal(body, &env); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		h.mu.Lock()
		h.got = append(h.got, env)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) deliveries() []tasknotify.Envelope {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]tasknotify.Envelope(nil), h.got...)
}

// eventStream reads server-sent events from the task events endpoint.
type eventStream struct {
	events chan tasknotify.Envelope
}

func openEventStream(t *testing.T, url, lastEventID string) *eventStream {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &eventStream{events: make(chan tasknotify.Envelope, 16)}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var env tasknotify.Envelope
				if json.Unmarshal([]byte(data), &env) == nil {
					s.events <- env
				}
			}
		}
		close(s.events)
	}()
	return s
}

func (s *eventStream) next(t *testing.T, wait time.Duration) tasknotify.Envelope {
	t.Helper()
	select {
	case env, ok := <-s.events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return env
	case <-time.After(wait):
		t.Fatal("no event streamed")
	}
	return tasknotify.Envelope{}
}

// TestTaskConfigFrozenAtStartup edits the config of a running host: a
// presentation field of the task server stays hot-reloadable, a change to
// what its background calls depend on is refused for submits and polls
// with a clear message until a restart.
func TestTaskConfigFrozenAtStartup(t *testing.T) {
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	reports := buildInto(t, dir, "./examples/mcpserver/reports", "reports")
	cfg := filepath.Join(dir, "extensions_config.json")
	write := func(extra string) {
		t.Helper()
		doc := fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, %s "task_toolsets": [{"name": "report-generation",
		"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]}}}`, reports, extra)
		if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`"description": "Reports",`)
	settingsFile := filepath.Join(dir, "antler.yaml")
	if err := os.WriteFile(settingsFile, []byte("mcp_tasks:\n  enabled: true\n  poll_interval_seconds: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	host := startServe(t, antler, "--config", cfg, "--settings", settingsFile, "--data", filepath.Join(dir, "data"))
	submit := func() map[string]any {
		t.Helper()
		code, res := host.do("POST", "/api/mcp/tools/reports_submit_report/call", `{"arguments": {"topic": "q3", "delay_ms": 600000}, "thread_id": "t1"}`)
		if code != 200 {
			t.Fatalf("submit: %d %v", code, res)
		}
		return res
	}
	res := submit()
	id, _ := res["structuredContent"].(map[string]any)["task_id"].(string)
	if id == "" {
		t.Fatalf("submit: %v", res)
	}

	write(`"description": "Quarterly reports",`) // presentation only
	if res := submit(); res["isError"] == true {
		t.Fatalf("a description edit broke task submits: %v", res)
	}

	write(`"description": "Quarterly reports", "env": {"REPORTS_MODE": "fast"},`)
	const msg = "MCP task-enabled server configuration changed after Antler started (reports); restart Antler before using durable task tools"
	if res := submit(); res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), msg) {
		t.Fatalf("a drifted submit: %v", res)
	}
	host.awaitDetail("t1", id, "the background poll refusing the drifted config", func(d map[string]any) bool {
		return strings.Contains(fmt.Sprint(d["last_poll_error"]), msg) && d["status"] != "failed"
	})
}

// TestTwoHostsOnPostgresSurviveACrash runs two `antler serve` processes on
// one Postgres task table against one reports server, submits through the
// first and SIGKILLs it while its tasks are still running: the second host
// completes every task and delivers each completion to the webhook once.
func TestTwoHostsOnPostgresSurviveACrash(t *testing.T) {
	dsn := storetest.PostgresSchema(t, storetest.PostgresURL(t))
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	url := testmcp.StartReportsHTTP(t) + "/mcp"
	cfg := filepath.Join(dir, "extensions_config.json")
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"type": "http", "url": %q, "task_toolsets": [{"name": "report-generation",
		"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]}}}`, url)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := newHookReceiver(t)
	settingsFile := filepath.Join(dir, "antler.yaml")
	yml := fmt.Sprintf("mcp_tasks:\n  enabled: true\n  poll_interval_seconds: 1\n  lease_seconds: 5\n"+
		"  notifications:\n    webhook_url: %s/hook\n    webhook_secret: %s\n", hook.srv.URL, hookSecret)
	if err := os.WriteFile(settingsFile, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(name string) []string {
		return []string{"--config", cfg, "--settings", settingsFile, "--data", filepath.Join(dir, name), "--db", dsn}
	}
	a := startServe(t, antler, args("a")...)
	b := startServe(t, antler, args("b")...)

	var ids []string
	for i := range 6 {
		code, res := a.do("POST", "/api/mcp/tools/reports_submit_report/call",
			fmt.Sprintf(`{"arguments": {"topic": "r%d", "delay_ms": 5000}, "thread_id": "t1"}`, i))
		sc, _ := res["structuredContent"].(map[string]any)
		id, _ := sc["task_id"].(string)
		if code != 200 || id == "" {
			t.Fatalf("submit: %d %v", code, res)
		}
		ids = append(ids, id)
	}
	// The crash comes once every task has been claimed and polled (by
	// either host), so that a's leases are live when it dies.
	for _, id := range ids {
		a.awaitDetail("t1", id, "a first poll", polled)
	}
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	_ = a.cmd.Wait()

	for _, id := range ids {
		b.awaitDetail("t1", id, "completed and delivered on the surviving host", completedAndDelivered)
	}
	keys := map[string]map[string]bool{}
	for _, env := range hook.deliveries() {
		if keys[env.TaskID] == nil {
			keys[env.TaskID] = map[string]bool{}
		}
		keys[env.TaskID][env.IdempotencyKey] = true
		if !strings.Contains(string(env.Event), `"status":"completed"`) {
			t.Errorf("task %s: delivered event %s", env.TaskID, env.Event)
		}
	}
	for _, id := range ids {
		if len(keys[id]) != 1 {
			t.Errorf("task %s was delivered under %d idempotency keys, want 1: %v", id, len(keys[id]), keys[id])
		}
	}
}
