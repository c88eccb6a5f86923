package spectasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/eventually"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/spectasks"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/tasktools"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/testtask"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// research is server-everything's 2025-11-25 task tool; agents see it as
// exposed (prefixed with the server's name).
const (
	research = "simulate-research-query"
	exposed  = "everything_" + research
)

// transports are the two ways the test reaches server-everything: its
// stdio process (one per user thread) and its streamable HTTP server (a
// task store per Mcp-Session-Id).
var transports = []struct {
	name   string
	server func(t *testing.T) string // the config entry
}{
	{"stdio", func(t *testing.T) string {
		return fmt.Sprintf(`{"command": "node", "args": [%q]}`, testnpm.Everything(t))
	}},
	{"http", func(t *testing.T) string {
		return fmt.Sprintf(`{"type": "http", "url": %q}`, testnpm.StartEverythingHTTP(t))
	}},
}

func doc(server string) string { return `{"mcpServers": {"everything": ` + server + `}}` }

// researchTool is the research tool as agents see it: a durable task tool,
// with no task_toolsets entry.
func researchTool(t *testing.T, cache *toolcache.Cache) toolcache.Tool {
	t.Helper()
	tool := listedTool(t, cache, exposed)
	if tool.TaskSupport != "required" || !tool.IsDurable() || tool.TaskToolset != nil {
		t.Fatalf("%s: task support %q, durable %v, toolset %v; want a required MCP task tool", research, tool.TaskSupport, tool.IsDurable(), tool.TaskToolset)
	}
	return tool
}

// listedTool is the tool the cache lists as name.
func listedTool(t testing.TB, cache *toolcache.Cache, name string) toolcache.Tool {
	t.Helper()
	snap, err := cache.ToolSet(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := snap.Tool(name)
	if !ok {
		t.Fatalf("%s is not listed; servers: %+v", name, snap.ServerStatuses())
	}
	return tool
}

// submit calls the tool the way both doors do and returns the local id.
func submit(t *testing.T, svc *taskservice.Service, tool toolcache.Tool, args string) string {
	t.Helper()
	res, err := tasktools.New(svc, nil).Submit(context.Background(), tool, dispatch.Request{
		UserID: "alice", ThreadID: "t1", Arguments: json.RawMessage(args),
	})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["task_id"].(string)
	if res["isError"] == true || !strings.HasPrefix(id, task.LocalIDPrefix) {
		t.Fatalf("submit = %v, want a local task id", res)
	}
	return id
}

// waitStatus waits until the task is in status want, and fails at once if
// it ends in another.
func waitStatus(t *testing.T, store *taskstore.Store, id string, want task.Status) taskstore.Task {
	t.Helper()
	var row taskstore.Task
	eventually.Check(t, fmt.Sprintf("task %s to end %s", id, want), func() (bool, string) {
		var err error
		row, err = store.Get(context.Background(), id, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if row.Status.IsTerminal() && row.Status != want {
			t.Fatalf("task ended %s (error %q, last poll error %q), want %s", row.Status, row.Error, row.LastPollError, want)
		}
		return row.Status == want, fmt.Sprintf("%s (last poll error %q)", row.Status, row.LastPollError)
	})
	return row
}

// TestResearchCompletesAsDurableTask runs server-everything's research tool
// through the durable runtime: the submit is a task-augmented tools/call,
// the service polls tasks/get and takes the report with tasks/result. On
// streamable HTTP the task keeps the session it was created on.
func TestResearchCompletesAsDurableTask(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			rt := testtask.New(t, doc(tr.server(t)), testtask.FastConfig())
			tool := researchTool(t, rt.Cache)
			rt.Service.Start()
			id := submit(t, rt.Service, tool, `{"topic": "durable gateways", "ambiguous": false}`)
			row := waitStatus(t, rt.Store, id, task.StatusCompleted)

			var res struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				Meta map[string]any `json:"_meta"`
			}
			if err := json.Unmarshal(row.Result, &res); err != nil || len(res.Content) == 0 {
				t.Fatalf("result = %s (%v), want a CallToolResult", row.Result, err)
			}
			if !strings.Contains(res.Content[0].Text, "# Research Report: durable gateways") {
				t.Errorf("report = %.200q, want the research report on the topic", res.Content[0].Text)
			}
			if row.DriverName != spectasks.Name || row.TaskName != exposed {
				t.Errorf("driver %q, task name %q; want %q, %q", row.DriverName, row.TaskName, spectasks.Name, exposed)
			}
			var data map[string]string
			if err := json.Unmarshal(row.DriverData, &data); err != nil {
				t.Fatal(err)
			}
			if data[spectasks.ToolKey] != research {
				t.Errorf("driver data %v, want tool %q", data, research)
			}
			if _, has := data[spectasks.SessionKey]; has != (tr.name == "http") {
				t.Errorf("driver data %v: session kept = %v, want it only on streamable HTTP", data, has)
			}
		})
	}
}

// TestResearchCancels cancels a running research task: tasks/cancel ends it
// cancelled, and it stays so.
func TestResearchCancels(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			rt := testtask.New(t, doc(tr.server(t)), testtask.FastConfig())
			tool := researchTool(t, rt.Cache)
			rt.Service.Start()
			id := submit(t, rt.Service, tool, `{"topic": "cancellation"}`)
			row, err := rt.Service.Cancel(context.Background(), id, task.Scope{User: "alice", Thread: "t1"})
			if err != nil {
				t.Fatalf("cancel: %v", err)
			}
			if row.Status != task.StatusCancelled {
				row = waitStatus(t, rt.Store, id, task.StatusCancelled) // a cancel the service retries
			}
			if row.Result != nil {
				t.Errorf("cancelled task has a result: %s", row.Result)
			}
		})
	}
}

// TestResearchSurvivesRestartOnItsSession submits on one host's shared
// streamable HTTP connection and polls from another host (a restart after
// a crash: a new connection, a new session). server-everything keeps tasks
// per session, so the task completes only because its polls go on the
// session it was created on.
func TestResearchSurvivesRestartOnItsSession(t *testing.T) {
	url := testnpm.StartEverythingHTTP(t)
	config := doc(fmt.Sprintf(`{"type": "http", "url": %q}`, url))
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "tasks.db")

	first := host(t, config, dbPath)
	first.svc.Start()
	id := submit(t, first.svc, researchTool(t, first.cache), `{"topic": "restarts"}`)
	// The first host "crashes": it polls no more, and its connection never
	// ends the session.
	first.svc.Stop()

	second := host(t, config, dbPath)
	researchTool(t, second.cache) // discovery: the second host's own session
	second.svc.Start()
	row := waitStatus(t, second.store, id, task.StatusCompleted)
	if !strings.Contains(string(row.Result), "Research Report: restarts") {
		t.Errorf("result = %.200s, want the report", row.Result)
	}
}

type hostParts struct {
	cache *toolcache.Cache
	store *taskstore.Store
	svc   *taskservice.Service
}

// host is one Antler host's task runtime over the store at dbPath.
func host(t *testing.T, config, dbPath string) hostParts {
	t.Helper()
	rt := testtask.Open(t, testtask.Options{Doc: config, DSN: dbPath})
	return hostParts{cache: rt.Cache, store: rt.Store, svc: rt.Service}
}

// TestForgottenSessionFailsTheTask ends the session a task lives in (as a
// server restart would) before another host polls it: server-everything no
// longer knows the session, and the task fails for good with that reason
// instead of being polled forever.
func TestForgottenSessionFailsTheTask(t *testing.T) {
	url := testnpm.StartEverythingHTTP(t)
	config := doc(fmt.Sprintf(`{"type": "http", "url": %q}`, url))
	dbPath := filepath.Join(t.TempDir(), "tasks.db")

	first := host(t, config, dbPath)
	first.svc.Start()
	id := submit(t, first.svc, researchTool(t, first.cache), `{"topic": "forgotten"}`)
	first.svc.Stop()
	row, err := first.store.Get(context.Background(), id, "alice")
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]string
	if err := json.Unmarshal(row.DriverData, &data); err != nil || data[spectasks.SessionKey] == "" {
		t.Fatalf("driver data %s (%v), want the task's session", row.DriverData, err)
	}
	req, err := http.NewRequest(http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", data[spectasks.SessionKey])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE of the task's session: %s", resp.Status)
	}

	second := host(t, config, dbPath)
	second.svc.Start()
	row = waitStatus(t, second.store, id, task.StatusFailed)
	if !strings.Contains(row.Error, "No valid session ID") {
		t.Errorf("error = %q, want the server's refusal of the forgotten session", row.Error)
	}
}

// TestOptOutKeepsPlainTools: with spec_tasks "off" the research tool is a
// plain tool again (no durable task, no task contract in its description).
func TestOptOutKeepsPlainTools(t *testing.T) {
	server := fmt.Sprintf(`{"command": "node", "args": [%q], "spec_tasks": "off"}`, testnpm.Everything(t))
	rt := testtask.New(t, doc(server), testtask.FastConfig())
	snap, err := rt.Cache.ToolSet(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := snap.Tool(exposed)
	if !ok {
		t.Fatalf("%s is not listed", exposed)
	}
	if tool.IsDurable() || tool.TaskSupport != "" || strings.Contains(tool.Description, "durable background task") {
		t.Errorf("tool %+v, want a plain tool", tool)
	}
}
