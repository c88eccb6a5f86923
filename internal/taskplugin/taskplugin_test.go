package taskplugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskplugin"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// carriers build a driver's source folder into a config entry: the real
// .wasm module and the real process binary.
var carriers = []struct {
	name  string
	entry func(t *testing.T, dir string, timeoutMS int) string
}{
	{"wasm", func(t *testing.T, dir string, timeoutMS int) string {
		return fmt.Sprintf(`{"kind": "wasm", "path": %q, "timeout_ms": %d}`, plugintest.BuildWasm(t, dir), timeoutMS)
	}},
	{"process", func(t *testing.T, dir string, timeoutMS int) string {
		return fmt.Sprintf(`{"kind": "process", "path": %q, "timeout_ms": %d}`, buildProcess(t, dir), timeoutMS)
	}},
}

var processBuilds sync.Map // dir → *processBuild

type processBuild struct {
	once      sync.Once
	path, out string
	err       error
}

// buildProcess compiles a driver folder as a process plugin, once per test
// process.
func buildProcess(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := processBuilds.LoadOrStore(abs, &processBuild{})
	b := v.(*processBuild)
	b.once.Do(func() {
		out, err := os.MkdirTemp("", "antler-driver-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(out, filepath.Base(abs))
		cmd := exec.Command("go", "build", "-o", b.path, ".")
		cmd.Dir = abs
		o, err := cmd.CombinedOutput()
		b.out, b.err = string(o), err
	})
	if b.err != nil {
		t.Fatalf("build %s: %v\n%s", dir, b.err, b.out)
	}
	return b.path
}

const (
	exampleDriver = "../../examples/plugins/jobsdriver"
	hostileDriver = "testdata/hostile"
)

// rig is a gateway over the task runtime, with the jobs server "jobs" (its
// task toolset driven by driver) and a second jobs server "other".
type rig struct {
	t   *testing.T
	url string
	rt  *testtask.Runtime
}

func newRig(t *testing.T, driver string) *rig {
	t.Helper()
	jobs := testmcp.BuildJobs(t)
	doc := fmt.Sprintf(`{"mcpServers": {
	  "jobs": {"command": %q, "task_toolsets": [{"name": "jobs", "submit_tool": "enqueue",
	    "status_tool": "job_state", "cancel_tool": "abort_job", "driver": %s}]},
	  "other": {"command": %q}}}`, jobs, driver, jobs)
	cfg := testtask.FastConfig()
	cfg.TrackingDegradedAfterErrors = 2
	rt := testtask.New(t, doc, cfg)
	rt.Service.Start()
	gw := testgateway.New(t, gateway.Options{Cache: rt.Cache, Auth: principal.New(nil), Tasks: rt.Service})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	return &rig{t: t, url: srv.URL, rt: rt}
}

func (r *rig) do(method, path, body string) (int, map[string]any) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.url+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return res.StatusCode, out
}

// submit calls the jobs server's submit tool through the REST door and
// returns the Antler task id.
func (r *rig) submit(args string) string {
	r.t.Helper()
	code, res := r.do("POST", "/api/mcp/tools/jobs_enqueue/call", `{"arguments": `+args+`, "thread_id": "t1"}`)
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["task_id"].(string)
	if code != 200 || id == "" {
		r.t.Fatalf("submit: %d %v, want a task id", code, res)
	}
	return id
}

// until polls the task's detail until done says so.
func (r *rig) until(id string, done func(map[string]any) bool) map[string]any {
	r.t.Helper()
	var detail map[string]any
	eventually.Check(r.t, "task "+id, func() (bool, string) {
		_, detail = r.do("GET", "/api/threads/t1/mcp-tasks/"+id, "")
		return done(detail), fmt.Sprint(detail)
	})
	return detail
}

func terminal(d map[string]any) bool {
	s, _ := d["status"].(string)
	return s == "completed" || s == "failed" || s == "cancelled"
}

// TestExampleDriverThroughTheGateway runs the jobs example's tasks through
// the agent's submit path with the example driver in both carriers: a job
// completes with the output the second tool returns, a failing job fails
// with its reason, and a cancelled one ends cancelled.
func TestExampleDriverThroughTheGateway(t *testing.T) {
	for _, c := range carriers {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.entry(t, exampleDriver, 10000))

			done := r.until(r.submit(`{"payload": "hello", "steps": 2}`), terminal)
			if done["status"] != "completed" || !strings.Contains(fmt.Sprint(done["result"]), "processed: HELLO") {
				t.Errorf("completed task = %v, want the job's output", done)
			}

			failed := r.until(r.submit(`{"payload": "fail", "steps": 1}`), terminal)
			if failed["status"] != "failed" || !strings.Contains(fmt.Sprint(failed["error"]), "the payload asked to fail") {
				t.Errorf("failed task = %v, want the job's reason", failed)
			}

			id := r.submit(`{"payload": "long", "steps": 1000}`)
			r.until(id, func(d map[string]any) bool { return d["status"] == "working" })
			code, res := r.do("POST", "/api/mcp/tools/cancel_background_task/call", `{"arguments": {"task": "`+id+`"}, "thread_id": "t1"}`)
			if code != 200 {
				t.Fatalf("cancel: %d %v", code, res)
			}
			if d := r.until(id, terminal); d["status"] != "cancelled" {
				t.Errorf("cancelled task = %v", d)
			}
		})
	}
}

// TestHostileDriverFailsClosed runs a driver that loops, dies, answers
// nonsense, panics, or calls a server its task is not bound to, as another
// user or with the agent's per-request credentials: every poll
// fails (retryably, recorded as the task's poll error) and the task stays
// active with nothing written; no refused call reaches a server.
func TestHostileDriverFailsClosed(t *testing.T) {
	for _, c := range carriers {
		for _, mode := range []string{"loop", "exit", "garbage", "foreign", "user", "headers", "panic"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				t.Parallel() // each case mostly waits out poll backoffs
				r := newRig(t, c.entry(t, hostileDriver, 500))
				id := r.submit(`{"mode": "` + mode + `"}`)
				pid := r.rt.Drivers.Drivers()[0].Plugin().PID()
				d := r.until(id, func(d map[string]any) bool { return d["tracking_degraded"] == true || terminal(d) })
				if c.name == "process" && (mode == "loop" || mode == "exit") {
					// The stuck or dead process is gone, not left spinning;
					// the next call starts another.
					if err := syscall.Kill(pid, 0); pid == 0 || err == nil {
						t.Errorf("process %d that served the submit still runs after failing its polls (%v)", pid, err)
					}
				}
				if d["status"] != "working" || d["result"] != nil || d["last_poll_error"] == nil {
					t.Errorf("task after failed polls = %v, want still working, no result, a poll error", d)
				}
				if msg := fmt.Sprint(d["last_poll_error"]); !strings.Contains(msg, "MCP task driver") {
					t.Errorf("poll error %q does not name the driver", msg)
				}
				// A refused call_tool never reached a server: "other" has no
				// job, "jobs" only the one submit enqueued.
				for server, want := range map[string]float64{"other": 0, "jobs": 1} {
					_, res := r.do("POST", "/api/mcp/tools/"+server+"_job_stats/call", `{"arguments": {}, "thread_id": "t1"}`)
					if sc, _ := res["structuredContent"].(map[string]any); sc["enqueued"] != want {
						t.Errorf("%s server's stats = %v, want %v jobs enqueued", server, res, want)
					}
				}
			})
		}
	}
}

// stats reads a jobs server's counters through the REST door.
func (r *rig) stats(server string) map[string]any {
	r.t.Helper()
	_, res := r.do("POST", "/api/mcp/tools/"+server+"_job_stats/call", `{"arguments": {}, "thread_id": "t1"}`)
	sc, _ := res["structuredContent"].(map[string]any)
	return sc
}

// TestExampleDriverTakesAnswers runs a job that asks a question through the
// gateway with the example driver in both carriers: the task reaches
// input_required with the job's prompt visible and answerable, the answer
// posted to the task's input endpoint is delivered once through the
// driver's answer entry point, and the task completes with an output that
// reflects it. A declined question completes without input.
func TestExampleDriverTakesAnswers(t *testing.T) {
	for _, c := range carriers {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.entry(t, exampleDriver, 10000))
			for _, tt := range []struct{ body, want string }{
				{`{"action": "accept", "content": {"value": "blue"}}`, "processed: HELLO with blue"},
				{`{"action": "decline"}`, "processed: HELLO without input"},
			} {
				id := r.submit(`{"payload": "hello", "steps": 2, "ask": "Which colour?"}`)
				waiting := r.until(id, func(d map[string]any) bool { return d["status"] == "input_required" || terminal(d) })
				q, _ := waiting["input_required"].(map[string]any)
				ans, _ := waiting["answer"].(map[string]any)
				if waiting["status"] != "input_required" || q["message"] != "Which colour?" || ans["can_answer"] != true {
					t.Fatalf("waiting task = %v, want input_required with the prompt, answerable", waiting)
				}
				if code, res := r.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", tt.body); code/100 != 2 {
					t.Fatalf("answer: %d %v", code, res)
				}
				done := r.until(id, terminal)
				if done["status"] != "completed" || !strings.Contains(fmt.Sprint(done["result"]), tt.want) {
					t.Errorf("answered task = %v, want completed with %q", done, tt.want)
				}
				if a, _ := done["answer"].(map[string]any); a["status"] != "delivered" {
					t.Errorf("answer after completion = %v, want delivered", done["answer"])
				}
			}
			if st := r.stats("jobs"); st["inputs_applied"] != float64(2) || st["input_calls"] != float64(2) {
				t.Errorf("jobs server stats = %v, want each answer delivered once", st)
			}
		})
	}
}

// TestHostileAnswerStaysPending runs a driver whose answer entry point
// delivers the input upstream and then answers garbage or dies (a trap in
// Wasm, a crash of the process): the answer stays pending under the
// service's retries, delivered again with the same idempotency key (the
// upstream takes it once), and the task is never written from the broken
// reply.
func TestHostileAnswerStaysPending(t *testing.T) {
	for _, c := range carriers {
		for _, mode := range []string{"answer-garbage", "answer-exit"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				r := newRig(t, c.entry(t, hostileDriver, 2000))
				id := r.submit(`{"mode": "` + mode + `"}`)
				r.until(id, func(d map[string]any) bool { return d["status"] == "input_required" })
				if code, res := r.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"value": "blue"}}`); code/100 != 2 {
					t.Fatalf("answer: %d %v", code, res)
				}
				eventually.Check(t, "the answer to be retried", func() (bool, string) {
					st := r.stats("jobs")
					return st["input_calls"].(float64) >= 3, fmt.Sprint(st)
				})
				if st := r.stats("jobs"); st["inputs_applied"] != float64(1) {
					t.Errorf("jobs server stats = %v, want the answer taken once across its redeliveries", st)
				}
				_, d := r.do("GET", "/api/threads/t1/mcp-tasks/"+id, "")
				a, _ := d["answer"].(map[string]any)
				if d["result"] != nil || terminal(d) || a["status"] != "pending" || !strings.Contains(fmt.Sprint(a["last_error"]), "MCP task driver") {
					t.Errorf("task after broken answer replies = %v, want active, no result, the answer pending with the driver's failure", d)
				}
			})
		}
	}
}

// TestServerDriverRunsSpecTaskTools names a plugin driver on a server of the
// 2026-07-28 tasks extension (mcpServers.<name>.driver): its tools are
// durable task tools as before, but their tasks run through the plugin, in
// both carriers, instead of the built-in extension driver.
func TestServerDriverRunsSpecTaskTools(t *testing.T) {
	tasks2026 := testmcp.BuildTasks2026(t)
	for _, c := range carriers {
		t.Run(c.name, func(t *testing.T) {
			doc := fmt.Sprintf(`{"mcpServers": {"t26": {"command": %q, "driver": %s}}}`, tasks2026, c.entry(t, "testdata/inline", 10000))
			rt := testtask.New(t, doc, testtask.FastConfig())
			rt.Service.Start()
			gw := testgateway.New(t, gateway.Options{Cache: rt.Cache, Auth: principal.New(nil), Tasks: rt.Service})
			srv := httptest.NewServer(gw.Handler())
			t.Cleanup(func() { gw.Close(); srv.Close() })
			r := &rig{t: t, url: srv.URL, rt: rt}

			code, res := r.do("POST", "/api/mcp/tools/t26_echo/call", `{"arguments": {"text": "hello"}, "thread_id": "t1"}`)
			sc, _ := res["structuredContent"].(map[string]any)
			id, _ := sc["task_id"].(string)
			if code != 200 || id == "" {
				t.Fatalf("echo through the server's driver: %d %v, want a task id", code, res)
			}
			done := r.until(id, terminal)
			if done["status"] != "completed" || !strings.Contains(fmt.Sprint(done["result"]), "via:inline driver") ||
				!strings.Contains(fmt.Sprint(done["result"]), "hello") {
				t.Errorf("task = %v, want completed by the plugin with the tool's text", done)
			}
			row, err := rt.Service.Get(context.Background(), id, task.Scope{User: "default", Thread: "t1"})
			if err != nil {
				t.Fatal(err)
			}
			if want := taskplugin.ServerDriverName("t26"); row.DriverName != want {
				t.Errorf("task driver = %q, want the server's plugin driver %q", row.DriverName, want)
			}
		})
	}
}

// TestDriverWithoutAnswers runs drivers that take no answers, a Wasm module
// built for ABI 1.0 (no answer feature, no antler_task_answer) and a process
// whose SDK driver has no Answer: they load and poll as before, their task
// waiting for input says it cannot be answered, and the answer endpoint
// refuses with 422 without recording anything. A module that declares the
// answer feature without its export is refused at load.
func TestDriverWithoutAnswers(t *testing.T) {
	for _, c := range carriers {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.entry(t, "testdata/noanswer", 5000))
			if d := r.rt.Drivers.Drivers()[0].Plugin(); d.CanAnswer() {
				t.Errorf("driver %+v declares answers", d.Info())
			}
			id := r.submit(`{"payload": "x"}`)
			d := r.until(id, func(d map[string]any) bool { return d["status"] == "input_required" || terminal(d) })
			if a, _ := d["answer"].(map[string]any); d["status"] != "input_required" || a["can_answer"] != false {
				t.Fatalf("task = %v, want input_required and not answerable", d)
			}
			code, res := r.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"value": "blue"}}`)
			if code != http.StatusUnprocessableEntity {
				t.Errorf("answer to a driver without answers: %d %v, want 422", code, res)
			}
			if _, d := r.do("GET", "/api/threads/t1/mcp-tasks/"+id, ""); d["status"] != "input_required" {
				t.Errorf("task after the refused answer = %v", d)
			}
		})
	}
	t.Run("wasm/declared-without-export", func(t *testing.T) {
		host, err := plugins.NewHost("", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close(context.Background())
		_, err = host.LoadDriver(context.Background(), plugins.Entry{Name: "liar", Kind: plugins.KindWasm, Path: plugintest.BuildWasm(t, "testdata/answerliar")})
		if err == nil || !strings.Contains(err.Error(), abi.ExportTaskAnswer) {
			t.Errorf("load = %v, want a refusal naming %s", err, abi.ExportTaskAnswer)
		}
	})
}
