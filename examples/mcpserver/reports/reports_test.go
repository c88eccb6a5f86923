package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// testTimeout bounds every exchange with a server, so a hang fails the test
// instead of stalling the whole run.
const testTimeout = 30 * time.Second

// binPath is the reports binary, built once by TestMain.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "antler-reports-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create build dir:", err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "reports")
	if runtime.GOOS == "windows" {
		binPath += ".exe"
	}
	// go test runs in the package directory and puts its own toolchain
	// first on PATH.
	if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// serverProc is a reports process started with an HTTP transport.
type serverProc struct {
	base   string // http://host:port
	cmd    *exec.Cmd
	exited chan struct{}
	stderr *lockedBuffer
}

// lockedBuffer collects a child's stderr; the os/exec copier writes while a
// failing test may read.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer runs the binary with -transport transportName and args, waits for
// its "listening on" line and stops it (SIGTERM, then SIGKILL after five
// seconds) when the test ends.
func startServer(t *testing.T, transportName string, args ...string) *serverProc {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"-transport", transportName}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	s := &serverProc{cmd: cmd, exited: make(chan struct{}), stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start reports server: %v", err)
	}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, r)
		_ = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("reports server stderr:\n%s", s.stderr.String())
		}
	})

	select {
	case line := <-lines:
		base, ok := strings.CutPrefix(line, "listening on ")
		if !ok || !strings.HasPrefix(base, "http://") {
			t.Fatalf("unexpected first line %q; stderr:\n%s", line, s.stderr.String())
		}
		s.base = base
	case <-time.After(testTimeout):
		t.Fatalf("server did not announce its address within %s", testTimeout)
	}
	return s
}

// stop signals the server and waits for it to exit, killing it if it has
// not exited within five seconds.
func (s *serverProc) stop(sig syscall.Signal) {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// connectFunc starts a fresh reports server with args and returns an
// initialized client to it.
type connectFunc func(t *testing.T, args ...string) *client.Client

// transports returns a connector for each transport the server speaks.
func transports() map[string]connectFunc {
	return map[string]connectFunc{
		"stdio": func(t *testing.T, args ...string) *client.Client {
			t.Helper()
			// Over stdio the server keeps its tasks in its workspace.
			c, err := client.NewStdioMCPClient(binPath, []string{workspaceEnv + "=" + t.TempDir()}, args...)
			if err != nil {
				t.Fatalf("start stdio client: %v", err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return initialized(t, c)
		},
		"http": func(t *testing.T, args ...string) *client.Client {
			t.Helper()
			s := startServer(t, "http", args...)
			return httpClient(t, s.base)
		},
		"sse": func(t *testing.T, args ...string) *client.Client {
			t.Helper()
			s := startServer(t, "sse", args...)
			c, err := client.NewSSEMCPClient(s.base + "/sse")
			if err != nil {
				t.Fatalf("create SSE client: %v", err)
			}
			return started(t, c)
		},
	}
}

// httpClient returns an initialized streamable HTTP client for base.
func httpClient(t *testing.T, base string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPTimeout(testTimeout))
	if err != nil {
		t.Fatalf("create streamable HTTP client: %v", err)
	}
	return started(t, c)
}

// started starts c for the life of the test and initializes it. The SSE
// transport ties its event stream to the context given to Start.
func started(t *testing.T, c *client.Client) *client.Client {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return initialized(t, c)
}

// initialized performs the handshake.
func initialized(t *testing.T, c *client.Client) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "reports-test", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
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

// payload is the union of the submit, status and cancel payloads; raw keeps
// every key so tests can check what is absent.
type payload struct {
	TaskID         string `json:"task_id"`
	Status         string `json:"status"`
	Result         string `json:"result"`
	ResultArtifact *struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mime_type"`
	} `json:"result_artifact"`
	Error            string         `json:"error"`
	ErrorCode        string         `json:"error_code"`
	InputRequired    map[string]any `json:"input_required"`
	PollAfterSeconds *float64       `json:"poll_after_seconds"`
	raw              map[string]any
}

// has reports whether the payload carries key.
func (p payload) has(key string) bool {
	_, ok := p.raw[key]
	return ok
}

// decode re-decodes res's structuredContent into v, and checks that the text
// content is the same JSON, as the MCP specification recommends.
func decode(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected tool error: %s", text(res))
	}
	if res.StructuredContent == nil {
		t.Fatalf("no structuredContent; text %q", text(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("marshal structuredContent: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode structuredContent %s: %v", raw, err)
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		t.Fatalf("text content is not JSON: %v", err)
	}
	_ = json.Unmarshal(raw, &fromStructured)
	if !reflect.DeepEqual(fromText, fromStructured) {
		t.Errorf("text content %s differs from structuredContent %s", text(res), raw)
	}
}

// toPayload decodes a submit, status or cancel answer.
func toPayload(t *testing.T, res *mcp.CallToolResult) payload {
	t.Helper()
	var p payload
	decode(t, res, &p)
	decode(t, res, &p.raw)
	return p
}

// submit calls submit_report and checks the submit contract.
func submit(t *testing.T, c *client.Client, args map[string]any) string {
	t.Helper()
	p := toPayload(t, call(t, c, toolSubmit, args))
	if p.TaskID == "" || p.Status != statusRunning || len(p.raw) != 2 {
		t.Fatalf("submit answered %v, want {task_id, status: running}", p.raw)
	}
	return p.TaskID
}

// status calls get_report_status and decodes the answer.
func status(t *testing.T, c *client.Client, id string) payload {
	t.Helper()
	p := toPayload(t, call(t, c, toolStatus, map[string]any{"task_id": id}))
	if p.TaskID != id {
		t.Fatalf("status answered task_id %q, want %q", p.TaskID, id)
	}
	return p
}

// cancelTask calls cancel_report and decodes the answer.
func cancelTask(t *testing.T, c *client.Client, id string) payload {
	t.Helper()
	p := toPayload(t, call(t, c, toolCancel, map[string]any{"task_id": id}))
	if p.TaskID != id {
		t.Fatalf("cancel answered task_id %q, want %q", p.TaskID, id)
	}
	return p
}

// stats calls report_stats.
// stats returns the server's counters. Sequential tests never run two status
// calls of a task at once, which is checked here; the counts tests compare
// leave the concurrency figure out.
func stats(t *testing.T, c *client.Client) statsPayload {
	t.Helper()
	var s statsPayload
	decode(t, call(t, c, toolStats, nil), &s)
	for id, ts := range s.PerTask {
		if ts.MaxConcurrentStatus > 1 && !t.Failed() && !strings.Contains(t.Name(), "slow") && !strings.Contains(t.Name(), "concurrent") {
			t.Errorf("task %s: %d status calls at once in a sequential test", id, ts.MaxConcurrentStatus)
		}
		ts.MaxConcurrentStatus = 0
		s.PerTask[id] = ts
	}
	return s
}

// await polls the status of id until it leaves running.
func await(t *testing.T, c *client.Client, id string) payload {
	t.Helper()
	var p payload
	eventually.True(t, "task "+id+" to leave running", func() bool {
		p = status(t, c, id)
		return p.Status != statusRunning
	})
	return p
}

// TestContract runs every scenario over every transport, each against a
// fresh server.
func TestContract(t *testing.T) {
	scenarios := map[string]func(t *testing.T, connect connectFunc){
		"lifecycle":       testLifecycle,
		"fail":            testFail,
		"input_required":  testInputRequired,
		"answers":         testAnswers,
		"not_found":       testNotFound,
		"status_is_error": testStatusIsError,
		"bad_output":      testBadOutput,
		"cancel":          testCancel,
		"stats":           testStats,
		"poll_after":      testPollAfter,
		"result_bytes":    testResultBytes,
		"artifact":        testArtifact,
		"slow_status":     testSlowStatus,
		"hang_status":     testHangStatus,
		"unique_ids":      testUniqueIDs,
		"bad_arguments":   testBadArguments,
		"tools":           testTools,
	}
	for tname, connect := range transports() {
		t.Run(tname, func(t *testing.T) {
			t.Parallel()
			for name, scenario := range scenarios {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					scenario(t, connect)
				})
			}
		})
	}
}

// testLifecycle: submit → running → completed with a result after the
// default delay of one second.
func testLifecycle(t *testing.T, connect connectFunc) {
	c := connect(t)
	start := time.Now()
	id := submit(t, c, map[string]any{"topic": "tides"})
	if !strings.HasPrefix(id, "report-1-") {
		t.Errorf("first task id = %q, want prefix report-1-", id)
	}
	p := status(t, c, id)
	if p.Status != statusRunning || p.has("result") || p.has("error") || p.has("poll_after_seconds") {
		t.Fatalf("fresh status = %v, want bare running", p.raw)
	}
	p = await(t, c, id)
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Errorf("completed after %s, want at least the default 1s", elapsed)
	}
	if p.Status != statusCompleted || !strings.Contains(p.Result, "tides") {
		t.Fatalf("final status = %v, want completed with a report on tides", p.raw)
	}
	for _, key := range []string{"error", "error_code", "result_artifact", "input_required", "poll_after_seconds"} {
		if p.has(key) {
			t.Errorf("completed status carries %s: %v", key, p.raw)
		}
	}
	if again := status(t, c, id); again.Status != statusCompleted || again.Result != p.Result {
		t.Errorf("second completed status = %v, want the same result", again.raw)
	}
}

// testFail: fail ends the task failed with an error text and no error_code.
func testFail(t *testing.T, connect connectFunc) {
	c := connect(t)
	id := submit(t, c, map[string]any{"topic": "volcanoes", "delay_ms": 50, "fail": true})
	p := await(t, c, id)
	if p.Status != statusFailed || !strings.Contains(p.Error, "volcanoes") || p.has("result") || p.has("error_code") {
		t.Fatalf("status = %v, want failed with an error naming the topic", p.raw)
	}
}

// testInputRequired: after the delay the task asks a question and keeps
// asking until cancelled.
func testInputRequired(t *testing.T, connect connectFunc) {
	c := connect(t)
	id := submit(t, c, map[string]any{"topic": "bees", "delay_ms": 0, "input_required": true, "poll_after_seconds": 30})
	for range 2 {
		p := status(t, c, id)
		q, _ := p.InputRequired["question"].(string)
		if p.Status != statusInputRequired || !strings.Contains(q, "bees") {
			t.Fatalf("status = %v, want input_required with a question about bees", p.raw)
		}
		if p.PollAfterSeconds == nil || *p.PollAfterSeconds != 30 {
			t.Errorf("poll_after_seconds = %v, want 30", p.raw["poll_after_seconds"])
		}
	}
	if p := cancelTask(t, c, id); p.Status != statusCancelled || p.has("input_required") {
		t.Fatalf("cancel = %v, want cancelled", p.raw)
	}
	if p := status(t, c, id); p.Status != statusCancelled || p.has("input_required") || p.has("poll_after_seconds") {
		t.Fatalf("status after cancel = %v, want bare cancelled", p.raw)
	}
}

// testAnswers: ask makes a task wait on its question until respond_report
// answers it; the report reflects the answer, a repeated answer_id changes
// nothing, and an answer to a task not waiting for one is refused.
func testAnswers(t *testing.T, connect connectFunc) {
	c := connect(t)
	respond := func(id, action, answerID string, content map[string]any) (payload, *mcp.CallToolResult) {
		t.Helper()
		args := map[string]any{"task_id": id, "action": action, "answer_id": answerID}
		if content != nil {
			args["content"] = content
		}
		res := call(t, c, toolRespond, args)
		if res.IsError {
			return payload{}, res
		}
		return toPayload(t, res), res
	}
	id := submit(t, c, map[string]any{"topic": "owls", "delay_ms": 0, "ask": "Who reads it?", "respond_errors": 1})
	if p := status(t, c, id); p.Status != statusInputRequired || p.InputRequired["question"] != "Who reads it?" {
		t.Fatalf("status = %v, want input_required asking the knob's question", p.raw)
	}
	if _, res := respond(id, "accept", "a-1", map[string]any{"audience": "the board"}); !res.IsError {
		t.Fatalf("first respond with respond_errors 1 = %s, want isError", text(res))
	}
	if p, _ := respond(id, "accept", "a-1", map[string]any{"audience": "the board"}); p.Status != statusCompleted || !strings.Contains(p.Result, `"audience":"the board"`) {
		t.Fatalf("respond accept = %v, want completed with the answer in the report", p.raw)
	}
	if p, _ := respond(id, "accept", "a-1", map[string]any{"audience": "someone else"}); p.Status != statusCompleted || strings.Contains(p.Result, "someone else") {
		t.Errorf("repeated answer_id = %v, want the same completed report", p.raw)
	}
	if p, _ := respond(id, "decline", "a-2", nil); p.ErrorCode != "answer_refused" {
		t.Errorf("answer to a completed task = %v, want answer_refused", p.raw)
	}
	st := stats(t, c).PerTask[id]
	if st.RespondCalls != 4 || st.AnswerCalls["a-1"] != 3 || st.AnswerApplied != "a-1" {
		t.Errorf("stats = %+v", st)
	}

	declined := submit(t, c, map[string]any{"topic": "bats", "delay_ms": 0, "ask": "Who reads it?"})
	if p, _ := respond(declined, "decline", "d-1", nil); p.Status != statusCompleted || !strings.Contains(p.Result, "declined") {
		t.Errorf("respond decline = %v, want completed for a general audience", p.raw)
	}
	cancelled := submit(t, c, map[string]any{"topic": "moths", "delay_ms": 0, "ask": "Who reads it?"})
	if p, _ := respond(cancelled, "cancel", "c-1", nil); p.Status != statusCancelled {
		t.Errorf("respond cancel = %v, want cancelled", p.raw)
	}
}

// testNotFound: the not_found knob and unknown ids answer task_not_found.
func testNotFound(t *testing.T, connect connectFunc) {
	c := connect(t)
	id := submit(t, c, map[string]any{"topic": "ghosts", "delay_ms": 0, "not_found": true})
	for _, p := range []payload{
		status(t, c, id),
		status(t, c, "report-999-unknown"),
		cancelTask(t, c, "report-999-unknown"),
	} {
		if p.Status != statusFailed || p.ErrorCode != errorCodeNotFound || !strings.Contains(p.Error, "not found") {
			t.Errorf("answer = %v, want failed with error_code task_not_found", p.raw)
		}
	}
}

// testStatusIsError: status_is_error always answers isError; status_errors
// only for the first n calls.
func testStatusIsError(t *testing.T, connect connectFunc) {
	c := connect(t)
	always := submit(t, c, map[string]any{"topic": "storms", "delay_ms": 0, "status_is_error": true})
	for range 3 {
		res := call(t, c, toolStatus, map[string]any{"task_id": always})
		if !res.IsError || res.StructuredContent != nil || !strings.Contains(text(res), "temporarily unavailable") {
			t.Fatalf("status = {isError: %v, structured: %v, text: %q}, want a textual tool error", res.IsError, res.StructuredContent, text(res))
		}
	}
	twice := submit(t, c, map[string]any{"topic": "storms", "delay_ms": 0, "status_errors": 2})
	for i := range 2 {
		if res := call(t, c, toolStatus, map[string]any{"task_id": twice}); !res.IsError {
			t.Fatalf("status call %d isError = false, want true", i+1)
		}
	}
	if p := status(t, c, twice); p.Status != statusCompleted {
		t.Fatalf("third status = %v, want completed", p.raw)
	}
}

// testBadOutput: bad_output answers text without structuredContent.
func testBadOutput(t *testing.T, connect connectFunc) {
	c := connect(t)
	id := submit(t, c, map[string]any{"topic": "noise", "bad_output": true})
	res := call(t, c, toolStatus, map[string]any{"task_id": id})
	if res.IsError || res.StructuredContent != nil || !strings.Contains(text(res), id) {
		t.Fatalf("status = {isError: %v, structured: %v, text: %q}, want text only", res.IsError, res.StructuredContent, text(res))
	}
}

// testCancel: cancelling is idempotent, keeps final states and every call is
// counted once.
func testCancel(t *testing.T, connect connectFunc) {
	c := connect(t)
	running := submit(t, c, map[string]any{"topic": "glaciers", "delay_ms": 60_000})
	if p := status(t, c, running); p.Status != statusRunning {
		t.Fatalf("status = %v, want running", p.raw)
	}
	for range 2 {
		if p := cancelTask(t, c, running); p.Status != statusCancelled || p.has("result") || p.has("error") {
			t.Fatalf("cancel = %v, want bare cancelled", p.raw)
		}
	}
	if p := status(t, c, running); p.Status != statusCancelled {
		t.Fatalf("status after cancel = %v, want cancelled", p.raw)
	}

	done := submit(t, c, map[string]any{"topic": "comets", "delay_ms": 0})
	if p := cancelTask(t, c, done); p.Status != statusCompleted || !strings.Contains(p.Result, "comets") {
		t.Errorf("cancel of a completed task = %v, want completed with its result", p.raw)
	}
	failed := submit(t, c, map[string]any{"topic": "quakes", "delay_ms": 0, "fail": true})
	if p := cancelTask(t, c, failed); p.Status != statusFailed || !strings.Contains(p.Error, "quakes") {
		t.Errorf("cancel of a failed task = %v, want failed with its error", p.raw)
	}

	s := stats(t, c)
	if got, want := s.PerTask[running], (taskStats{StatusCalls: 2, CancelCalls: 2}); !reflect.DeepEqual(got, want) {
		t.Errorf("per_task[%s] = %+v, want %+v", running, got, want)
	}
	if got, want := s.PerTask[done], (taskStats{CancelCalls: 1}); !reflect.DeepEqual(got, want) {
		t.Errorf("per_task[%s] = %+v, want %+v", done, got, want)
	}
}

// testStats: report_stats counts submits, status and cancel calls in total
// and per task; calls for unknown ids count only in the totals.
func testStats(t *testing.T, connect connectFunc) {
	c := connect(t)
	if s := stats(t, c); s.Submits != 0 || s.StatusCalls != 0 || s.CancelCalls != 0 || len(s.PerTask) != 0 {
		t.Fatalf("fresh stats = %+v, want zeros", s)
	}
	a := submit(t, c, map[string]any{"topic": "a", "delay_ms": 60_000})
	b := submit(t, c, map[string]any{"topic": "b", "delay_ms": 60_000, "status_is_error": true})
	for range 3 {
		status(t, c, a)
	}
	call(t, c, toolStatus, map[string]any{"task_id": b}) // isError still counts
	status(t, c, "nope")
	cancelTask(t, c, a)
	cancelTask(t, c, a)
	cancelTask(t, c, "nope")
	call(t, c, toolSubmit, map[string]any{}) // rejected: no topic, not counted

	want := statsPayload{
		Submits:     2,
		StatusCalls: 5,
		CancelCalls: 3,
		PerTask: map[string]taskStats{
			a: {StatusCalls: 3, CancelCalls: 2},
			b: {StatusCalls: 1},
		},
	}
	if got := stats(t, c); !reflect.DeepEqual(got, want) {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
}

// testPollAfter: poll_after_seconds is echoed verbatim while the task runs,
// and dropped once it has ended.
func testPollAfter(t *testing.T, connect connectFunc) {
	c := connect(t)
	for _, hint := range []float64{7.5, 0, -1} {
		id := submit(t, c, map[string]any{"topic": "hints", "delay_ms": 300, "poll_after_seconds": hint})
		p := status(t, c, id)
		if p.Status != statusRunning || p.PollAfterSeconds == nil || *p.PollAfterSeconds != hint {
			t.Errorf("running status = %v, want poll_after_seconds %v", p.raw, hint)
		}
		if p := await(t, c, id); p.Status != statusCompleted || p.has("poll_after_seconds") {
			t.Errorf("final status = %v, want completed without a hint", p.raw)
		}
	}
}

// testResultBytes: result_bytes sets the exact size of the result.
func testResultBytes(t *testing.T, connect connectFunc) {
	c := connect(t)
	for _, size := range []int{0, 10, 200_000} {
		id := submit(t, c, map[string]any{"topic": "bulk", "delay_ms": 0, "result_bytes": size})
		p := status(t, c, id)
		if p.Status != statusCompleted || !p.has("result") || len(p.Result) != size {
			t.Errorf("result_bytes %d: status %s with %d result bytes", size, p.Status, len(p.Result))
		}
		if size >= 100 && !strings.HasPrefix(p.Result, "Report "+id) {
			t.Errorf("result_bytes %d: result starts %q", size, p.Result[:40])
		}
	}
}

// testArtifact: the artifact knob adds result_artifact to completed tasks.
func testArtifact(t *testing.T, connect connectFunc) {
	c := connect(t)
	id := submit(t, c, map[string]any{"topic": "maps", "delay_ms": 0, "artifact": true})
	p := status(t, c, id)
	if p.Status != statusCompleted || p.ResultArtifact == nil ||
		p.ResultArtifact.URI != "reports://"+id+"/report.md" || p.ResultArtifact.MIMEType != "text/markdown" {
		t.Fatalf("status = %v, want completed with a text/markdown artifact", p.raw)
	}
}

// testSlowStatus: slow_status_ms delays that task's status answers without
// holding up calls for other tasks, and answers the state at reply time.
func testSlowStatus(t *testing.T, connect connectFunc) {
	c := connect(t)
	const slow = 1500 * time.Millisecond
	slowID := submit(t, c, map[string]any{"topic": "slow", "delay_ms": 60_000, "slow_status_ms": slow.Milliseconds()})
	fastID := submit(t, c, map[string]any{"topic": "fast", "delay_ms": 60_000})

	start := time.Now()
	answered := make(chan payload, 1)
	go func() {
		// call's t.Fatalf must not run off the test goroutine.
		ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = toolStatus
		req.Params.Arguments = map[string]any{"task_id": slowID}
		res, err := c.CallTool(ctx, req)
		var p payload
		if err == nil && res.StructuredContent != nil {
			raw, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(raw, &p)
		}
		answered <- p
	}()
	eventually.True(t, "the slow status call to arrive first", func() bool { return stats(t, c).InFlightStatus == 1 })
	if p := status(t, c, fastID); p.Status != statusRunning {
		t.Errorf("fast status = %v, want running", p.raw)
	}
	if elapsed := time.Since(start); elapsed >= slow {
		t.Errorf("fast status answered after %s, behind the slow one", elapsed)
	}
	// Cancelled while the slow call sleeps: the slow answer must say so.
	cancelTask(t, c, slowID)
	p := <-answered
	if elapsed := time.Since(start); elapsed < slow {
		t.Errorf("slow status answered after %s, want at least %s", elapsed, slow)
	}
	if p.Status != statusCancelled {
		t.Errorf("slow status = %+v, want cancelled", p)
	}
}

// testHangStatus: with hang_status_calls the first status call never
// answers on its own (it counts as in flight until the client gives up on
// it), and the next one answers normally.
func testHangStatus(t *testing.T, connect connectFunc) {
	c := connect(t)
	id := submit(t, c, map[string]any{"topic": "hung", "delay_ms": 0, "hang_status_calls": 1})
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = toolStatus
		req.Params.Arguments = map[string]any{"task_id": id}
		_, err := c.CallTool(ctx, req)
		gaveUp <- err
	}()
	eventually.True(t, "the hung status call to arrive", func() bool { return stats(t, c).InFlightStatus == 1 })
	select {
	case err := <-gaveUp:
		t.Fatalf("the hung status call answered: %v", err)
	default:
	}
	cancel()
	if err := <-gaveUp; err == nil {
		t.Fatal("a status call the client gave up on answered")
	}
	// Over streamable HTTP the server may not learn of the abandoned call,
	// so the second call can overlap it there: no stats check after this.
	if p := status(t, c, id); p.Status != statusCompleted {
		t.Errorf("second status = %v, want completed", p.raw)
	}
}

// testUniqueIDs: concurrent submits get distinct ids.
func testUniqueIDs(t *testing.T, connect connectFunc) {
	c := connect(t)
	const n = 30
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			req := mcp.CallToolRequest{}
			req.Params.Name = toolSubmit
			req.Params.Arguments = map[string]any{"topic": fmt.Sprint("t", i)}
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError {
				ids <- ""
				return
			}
			m, _ := res.StructuredContent.(map[string]any)
			id, _ := m["task_id"].(string)
			ids <- id
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if id == "" || seen[id] {
			t.Errorf("submit returned empty or repeated id %q", id)
		}
		seen[id] = true
	}
	if s := stats(t, c); s.Submits != n {
		t.Errorf("submits = %d, want %d", s.Submits, n)
	}
}

// testBadArguments: invalid arguments are tool errors, not protocol errors.
func testBadArguments(t *testing.T, connect connectFunc) {
	c := connect(t)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{toolSubmit, map[string]any{}, "topic"},
		{toolSubmit, map[string]any{"topic": "  "}, "topic"},
		{toolSubmit, map[string]any{"topic": 3}, "topic"},
		{toolSubmit, map[string]any{"topic": "x", "delay_ms": -1}, "delay_ms"},
		{toolSubmit, map[string]any{"topic": "x", "delay_ms": 1.5}, "delay_ms"},
		{toolSubmit, map[string]any{"topic": "x", "result_bytes": "big"}, "result_bytes"},
		{toolSubmit, map[string]any{"topic": "x", "fail": "yes"}, "fail"},
		{toolSubmit, map[string]any{"topic": "x", "poll_after_seconds": "soon"}, "poll_after_seconds"},
		{toolStatus, map[string]any{}, "task_id"},
		{toolCancel, map[string]any{"task_id": 7}, "task_id"},
	} {
		res := call(t, c, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s %v = {isError: %v, text: %q}, want an error about %s", tc.tool, tc.args, res.IsError, text(res), tc.want)
		}
	}
	if s := stats(t, c); s.Submits != 0 {
		t.Errorf("rejected submits were counted: %+v", s)
	}
}

// testTools: the four tools and their input schemas.
func testTools(t *testing.T, connect connectFunc) {
	c := connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	schemas := map[string]mcp.ToolInputSchema{}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		schemas[tool.Name] = tool.InputSchema
	}
	slices.Sort(names)
	if want := []string{toolCancel, toolStatus, toolStats, toolRespond, toolSubmit}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	sub := schemas[toolSubmit]
	if !slices.Equal(sub.Required, []string{"topic"}) {
		t.Errorf("submit_report required = %v, want [topic]", sub.Required)
	}
	for _, knob := range []string{"topic", "delay_ms", "fail", "input_required", "result_bytes", "poll_after_seconds",
		"slow_status_ms", "hang_status_calls", "not_found", "status_is_error", "status_errors", "bad_output", "artifact"} {
		if _, ok := sub.Properties[knob]; !ok {
			t.Errorf("submit_report schema lacks %s", knob)
		}
	}
	for _, name := range []string{toolStatus, toolCancel} {
		if s := schemas[name]; !slices.Equal(s.Required, []string{"task_id"}) || len(s.Properties) != 1 {
			t.Errorf("%s schema = %+v, want just a required task_id", name, s)
		}
	}
}

// TestStateSurvivesRestart kills an HTTP server that uses -state without
// warning and checks that its successor knows every task, its state and its
// counts, and keeps numbering ids where it left off.
func TestStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	statePath := filepath.Join(t.TempDir(), "sub", "state.json") // directory created by the server

	first := startServer(t, "http", "-state", statePath)
	c := httpClient(t, first.base)
	slow := submit(t, c, map[string]any{"topic": "slow", "delay_ms": 1500, "poll_after_seconds": 2})
	asking := submit(t, c, map[string]any{"topic": "asking", "delay_ms": 0, "input_required": true})
	cancelled := submit(t, c, map[string]any{"topic": "cancelled", "delay_ms": 60_000})
	done := submit(t, c, map[string]any{"topic": "done", "delay_ms": 0})
	if p := status(t, c, slow); p.Status != statusRunning {
		t.Fatalf("status = %v, want running", p.raw)
	}
	cancelTask(t, c, cancelled)
	before := stats(t, c)
	first.stop(syscall.SIGKILL) // no chance to flush anything at exit
	_ = c.Close()

	second := startServer(t, "http", "-state", statePath)
	c = httpClient(t, second.base)
	if got := stats(t, c); !reflect.DeepEqual(got, before) {
		t.Errorf("stats after restart = %+v, want %+v", got, before)
	}
	if p := status(t, c, slow); p.Status == statusRunning && (p.PollAfterSeconds == nil || *p.PollAfterSeconds != 2) {
		t.Errorf("restored running status = %v, want poll_after_seconds 2", p.raw)
	}
	if p := await(t, c, slow); p.Status != statusCompleted || !strings.Contains(p.Result, "slow") {
		t.Errorf("restored slow task = %v, want completed", p.raw)
	}
	if p := status(t, c, asking); p.Status != statusInputRequired {
		t.Errorf("restored asking task = %v, want input_required", p.raw)
	}
	if p := status(t, c, cancelled); p.Status != statusCancelled {
		t.Errorf("restored cancelled task = %v, want cancelled", p.raw)
	}
	if p := status(t, c, done); p.Status != statusCompleted || !strings.Contains(p.Result, "done") {
		t.Errorf("restored done task = %v, want completed", p.raw)
	}
	if id := submit(t, c, map[string]any{"topic": "next"}); !strings.HasPrefix(id, "report-5-") {
		t.Errorf("id after restart = %q, want prefix report-5-", id)
	}
	if s := stats(t, c); s.PerTask[slow].StatusCalls < 3 || s.PerTask[cancelled].CancelCalls != 1 || s.Submits != 5 {
		t.Errorf("stats after more calls = %+v", s)
	}

	// SIGTERM shuts the HTTP server down gracefully.
	second.stop(syscall.SIGTERM)
	if code := second.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0; stderr:\n%s", code, second.stderr.String())
	}
}

// TestStartupErrors checks the exit codes for a bad command line (2) and an
// unreadable state file (1).
func TestStartupErrors(t *testing.T) {
	t.Parallel()
	corrupt := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(corrupt, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"-transport", "carrier-pigeon"}, 2, "unknown transport"},
		{[]string{"extra"}, 2, "unexpected arguments"},
		{[]string{"-transport", "http", "-state", corrupt}, 1, "read state"},
	} {
		cmd := exec.Command(binPath, tc.args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantErr) {
			t.Errorf("%v: exit %d (%v), stderr %q; want exit %d mentioning %q", tc.args, code, err, stderr.String(), tc.wantCode, tc.wantErr)
		}
	}
}

// TestStdioKeepsTasksInItsWorkspace kills a stdio server started without
// -state in a thread workspace: the next process in that workspace (what a
// restarted host starts) knows the task and completes it. -state "" keeps
// tasks in memory.
func TestStdioKeepsTasksInItsWorkspace(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	start := func(args ...string) *client.Client {
		t.Helper()
		c, err := client.NewStdioMCPClient(binPath, []string{workspaceEnv + "=" + ws}, args...)
		if err != nil {
			t.Fatalf("start stdio client: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return initialized(t, c)
	}
	first := start()
	id := submit(t, first, map[string]any{"topic": "q3", "delay_ms": 300})
	_ = first.Close() // the host went away with its child
	if _, err := os.Stat(filepath.Join(ws, ".reports", "reports.json")); err != nil {
		t.Fatalf("no state file in the workspace: %v", err)
	}
	second := start()
	if p := await(t, second, id); p.Status != statusCompleted || !strings.Contains(p.Result, "q3") {
		t.Errorf("task after the restart = %v, want completed", p.raw)
	}
	memory := start("-state", "", "-name", "memory")
	if p := status(t, memory, id); p.Status != statusFailed {
		t.Errorf("-state \"\" server knows the task: %v", p.raw)
	}
	if _, err := os.Stat(filepath.Join(ws, ".reports", "memory.json")); err == nil {
		t.Error(`-state "" wrote a state file`)
	}
}

func TestDefaultStatePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, workspace, want string }{
		{"reports", "/data/ws", "/data/ws/.reports/reports.json"},
		{"reports", "", ".reports/reports.json"},
		{"../../etc/x", "/ws", "/ws/.reports/.._.._etc_x.json"},
		{"..", "/ws", "/ws/.reports/reports.json"},
		{"", "/ws", "/ws/.reports/reports.json"},
	} {
		if got := defaultStatePath(tc.name, tc.workspace); got != tc.want {
			t.Errorf("defaultStatePath(%q, %q) = %q, want %q", tc.name, tc.workspace, got, tc.want)
		}
	}
}
