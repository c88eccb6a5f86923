package toolcache_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// fairRig is a pooled cache over the real reports server (memory only: a
// task lives exactly as long as its process) and the real demo server, with
// a real SQLite task store pinning the sessions of active tasks.
type fairRig struct {
	*bundle
	store *taskstore.Store
	data  string
}

func newFairRig(t *testing.T, opts toolcache.Options) *fairRig {
	t.Helper()
	store, err := taskstore.Open(context.Background(), filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	r := &fairRig{store: store, data: t.TempDir()}
	r.bundle = &bundle{t: t, path: filepath.Join(t.TempDir(), "extensions_config.json")}
	r.write(doc(`"reports": `+stdio(testmcp.BuildReports(t), "", "-state", ""), `"demo": `+stdio(testmcp.Build(t), "")))
	opts.ConfigPath, opts.DataDir = r.path, r.data
	opts.Lookup = func(string) (string, bool) { return "", false }
	opts.Pinned = func(server, user, thread string) bool {
		active, err := store.HasActive(context.Background(), server, task.Scope{User: user, Thread: thread})
		return active || err != nil
	}
	r.cache = toolcache.New(opts)
	t.Cleanup(r.cache.Close)
	return r
}

// invoke calls a tool as user in thread and returns its structuredContent.
func (r *fairRig) invoke(s *toolcache.ToolSet, tool, user, thread string, args any) (map[string]any, error) {
	a, _ := json.Marshal(args)
	raw, err := s.Invoke(context.Background(), dispatch.Request{Name: tool, Arguments: a, UserID: user, ThreadID: thread})
	if err != nil {
		return nil, err
	}
	var res struct {
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError {
		return nil, fmt.Errorf("%s answered %s (%v)", tool, raw, err)
	}
	return res.StructuredContent, nil
}

func (r *fairRig) must(s *toolcache.ToolSet, tool, user, thread string, args any) map[string]any {
	r.t.Helper()
	out, err := r.invoke(s, tool, user, thread, args)
	if err != nil {
		r.t.Fatalf("%s as %s/%s: %v", tool, user, thread, err)
	}
	return out
}

// submitTask starts a report as user in thread and records it as the task
// runtime would: an active task pins the thread's reports session.
func (r *fairRig) submitTask(s *toolcache.ToolSet, user, thread string, args map[string]any) string {
	r.t.Helper()
	id, _ := r.must(s, "reports_submit_report", user, thread, args)["task_id"].(string)
	_, err := r.store.Create(context.Background(), taskstore.NewTask{
		ID: "mcp-task-" + thread, UserID: user, ThreadID: thread, ServerName: "reports", DriverName: "ordinary-tools",
		RemoteTaskID: id, TaskName: "report " + thread, State: taskstore.State{Status: "submitted"}, NextPollAt: time.Now(),
	}, time.Now())
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

// awaitReport polls the report until it ends; a process that lost the task
// answers task_not_found.
func (r *fairRig) awaitReport(s *toolcache.ToolSet, user, thread, id string) map[string]any {
	r.t.Helper()
	var p map[string]any
	eventually.True(r.t, "report "+id+" to end", func() bool {
		p = r.must(s, "reports_get_report_status", user, thread, map[string]any{"task_id": id})
		return p["status"] != "running"
	})
	return p
}

// TestFloodingUserCannotEvictOtherUsersCallsOrTasks is the attack: one
// agent opens a session per thread for 40 threads, first one after another
// and then all at once, while bob has a slow call in flight and an active
// durable task. Bob's call returns its result and his task completes in
// its own process; the flood only ever replaces the flooder's own idle
// sessions, and once all of hers are busy she gets a model-safe error.
func TestFloodingUserCannotEvictOtherUsersCallsOrTasks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		max, perUser int
		wantMessage  string
	}{
		{"mallory at her own limit", 64, 3, "this user already has the maximum number of open MCP sessions"},
		{"the pool full of busy sessions", 4, 16, "the host has no free MCP session right now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newFairRig(t, toolcache.Options{MaxSessions: tt.max, MaxSessionsPerUser: tt.perUser})
			s := r.snap()
			task := r.submitTask(s, "bob", "task", map[string]any{"topic": "q3", "delay_ms": 1000})
			slow, _ := r.must(s, "reports_submit_report", "bob", "call", map[string]any{"topic": "slow", "delay_ms": 0, "slow_status_ms": 3000})["task_id"].(string)
			type result struct {
				out map[string]any
				err error
			}
			slowDone := make(chan result, 1)
			go func() {
				out, err := r.invoke(s, "reports_get_report_status", "bob", "call", map[string]any{"task_id": slow})
				slowDone <- result{out, err}
			}()
			// The slow status call is in the server's handler: in flight.
			eventually.True(t, "bob's slow status call to be in flight", func() bool {
				st := r.must(s, "reports_report_stats", "bob", "call", map[string]any{})
				per, _ := st["per_task"].(map[string]any)[slow].(map[string]any)
				return per["max_concurrent_status"] == 1.0
			})

			// One thread after another: room comes from mallory's own idle sessions.
			var first int
			for i := range 40 {
				id := whoamiAs(t, s, "demo_whoami", "mallory", fmt.Sprint("seq-", i))
				if i == 0 {
					first = id.PID
				}
			}
			if again := whoamiAs(t, s, "demo_whoami", "mallory", "seq-0"); again.PID == first {
				t.Error("mallory's least recently used session was not the one closed")
			}
			// All at once, each call holding its session: beyond her share she is refused.
			var wg sync.WaitGroup
			var mu sync.Mutex
			var refused []string
			for i := range 40 {
				wg.Go(func() {
					_, err := r.invoke(s, "demo_sleep", "mallory", fmt.Sprint("par-", i), map[string]any{"ms": 1500})
					var ce *dispatch.CallError
					switch {
					case errors.As(err, &ce) && strings.Contains(ce.Message, tt.wantMessage):
						mu.Lock()
						refused = append(refused, ce.Message)
						mu.Unlock()
					case err != nil:
						t.Errorf("flood call: %v", err)
					}
				})
			}
			wg.Wait()
			if len(refused) == 0 {
				t.Fatal("40 concurrent threads of one user all got a session")
			}
			for _, internal := range []string{r.data, "sessionpool", "v2:", "pid"} {
				if strings.Contains(refused[0], internal) {
					t.Errorf("the refusal shows %q: %s", internal, refused[0])
				}
			}

			got := <-slowDone
			if got.err != nil || got.out["status"] != "completed" {
				t.Errorf("bob's slow call in flight: %v %v, want its result", got.out, got.err)
			}
			if p := r.awaitReport(s, "bob", "task", task); p["status"] != "completed" || !strings.Contains(fmt.Sprint(p["result"]), "q3") {
				t.Errorf("bob's durable task after the flood: %v, want completed in the process that ran it", p)
			}
			t.Logf("%d of 40 parallel flood calls refused: %s", len(refused), refused[0])
		})
	}
}

// TestIdleTimeoutKeepsTheSessionOfAnActiveTask: the janitor closes an idle
// session but not the one whose thread has an active task, although that
// one was idle longer.
func TestIdleTimeoutKeepsTheSessionOfAnActiveTask(t *testing.T) {
	t.Parallel()
	r := newFairRig(t, toolcache.Options{IdleTimeout: 300 * time.Millisecond})
	s := r.snap()
	task := r.submitTask(s, "bob", "t1", map[string]any{"topic": "q3", "delay_ms": 1000})
	whoamiAs(t, s, "demo_whoami", "bob", "t1")
	eventually.True(t, "the idle session to be closed", func() bool { return status(t, s, "demo").Sessions == 0 })
	if n := status(t, s, "reports").Sessions; n != 1 {
		t.Fatalf("reports sessions %d after the idle timeout, want the task's one", n)
	}
	if p := r.awaitReport(s, "bob", "t1", task); p["status"] != "completed" {
		t.Errorf("the task after the idle timeout: %v, want completed", p)
	}
}

// TestRebuildKeepsUnchangedServersSessions is what a config API edit does:
// only the edited server's sessions are retired.
func TestRebuildKeepsUnchangedServersSessions(t *testing.T) {
	t.Parallel()
	bin := testmcp.Build(t)
	b, _ := pooledBundle(t, doc(`"a": `+stdio(bin, ""), `"b": `+stdio(bin, "")))
	s := b.snap()
	a1 := whoamiAs(t, s, "a_whoami", "alice", "t1").PID
	b1 := whoamiAs(t, s, "b_whoami", "alice", "t1").PID
	b.write(doc(`"a": `+stdio(bin, ""), `"b": `+stdio(bin, "", "-tools", "extra")))
	b.cache.Rebuild()
	s2 := b.snap()
	if got := whoamiAs(t, s2, "a_whoami", "alice", "t1").PID; got != a1 {
		t.Errorf("a was not edited but its session was retired: pid %d, was %d", got, a1)
	}
	if got := whoamiAs(t, s2, "b_whoami", "alice", "t1").PID; got == b1 {
		t.Error("b was edited but its session was kept")
	}
}

// TestChurnedThreadsCannotOutnumberTheUsersLimit is the attack: a user at
// her limit of two stdio sessions opens thread after thread, each evicting
// her oldest session, on a server whose process lingers after its stdin
// closes (the two seconds a closed child is given before it is killed).
// Were an evicted session's place free at once, every new thread would add
// a process while the evicted ones linger, and a fast enough churn would
// hold any number of them; the user's processes, lingering ones included,
// never outnumber her limit.
func TestChurnedThreadsCannotOutnumberTheUsersLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "linger.sh")
	body := "#!/bin/sh\n" + strconv.Quote(testmcp.Build(t)) + "\nsleep 30\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, path: filepath.Join(dir, "extensions_config.json")}
	b.write(doc(`"linger": ` + stdio(script, "")))
	b.cache = toolcache.New(toolcache.Options{ConfigPath: b.path, DataDir: t.TempDir(), MaxSessionsPerUser: 2,
		Lookup: func(string) (string, bool) { return "", false }})
	t.Cleanup(b.cache.Close)
	s := b.snap()

	most := 0
	for i := range 4 {
		a, _ := json.Marshal(map[string]any{"message": "hi"})
		if _, err := s.Invoke(context.Background(), dispatch.Request{Name: "linger_echo", Arguments: a, UserID: "mallory", ThreadID: fmt.Sprint("t", i)}); err != nil {
			t.Fatalf("call in thread t%d: %v", i, err)
		}
		most = max(most, processesRunning(t, script))
	}
	if most > 2 {
		t.Errorf("%d processes of the user's sessions alive at once, want at most her limit of 2", most)
	}
}

// processesRunning counts the live processes whose command line names path.
func processesRunning(t *testing.T, path string) int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err == nil && bytes.Contains(cmdline, []byte(path)) {
			n++
		}
	}
	return n
}
