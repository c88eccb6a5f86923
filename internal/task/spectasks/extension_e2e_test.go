package spectasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/spectasks"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/tasktools"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// The 2026-07-28 example server (examples/mcpserver/tasks2026) as server
// "jobs": its long_job tool, which it runs as a task of the extension.
const (
	jobTool    = "long_job"
	jobExposed = "jobs_" + jobTool
)

// extTransports reach the example over stdio (its state in a file, so a
// child a restarted host starts resumes the jobs) and streamable HTTP.
var extTransports = []struct {
	name   string
	server func(t testing.TB) string
}{
	{"stdio", func(t testing.TB) string {
		state := filepath.Join(t.TempDir(), "jobs.json")
		return fmt.Sprintf(`{"command": %q, "args": ["-state", %q]}`, testmcp.BuildTasks2026(t), state)
	}},
	{"http", func(t testing.TB) string {
		return fmt.Sprintf(`{"type": "http", "url": %q}`, testmcp.StartBinaryHTTP(t, testmcp.BuildTasks2026(t), "tasks2026 server", "http")+"/mcp")
	}},
}

func jobsDoc(server string) string { return `{"mcpServers": {"jobs": ` + server + `}}` }

// jobsTool is long_job as agents see it: a durable tool of the extension.
func jobsTool(t testing.TB, cache *toolcache.Cache) toolcache.Tool {
	t.Helper()
	tool := listedTool(t, cache, jobExposed)
	if !tool.TaskExtension || !tool.IsDurable() || tool.TaskSupport != "" {
		t.Fatalf("%s: extension %v, durable %v, task support %q; want a 2026-07-28 task tool", jobExposed, tool.TaskExtension, tool.IsDurable(), tool.TaskSupport)
	}
	return tool
}

// reference is the driver's view of a stored task.
func reference(t *testing.T, row taskstore.Task) task.Reference {
	t.Helper()
	var data map[string]string
	if err := json.Unmarshal(row.DriverData, &data); err != nil {
		t.Fatal(err)
	}
	return task.Reference{LocalTaskID: row.ID, UserID: row.UserID, ThreadID: row.ThreadID, ServerName: row.ServerName,
		RemoteTaskID: row.RemoteTaskID, DriverData: data}
}

// jobStats calls the example's job_stats tool directly (a plain call: the
// server answers it inline).
func jobStats(t *testing.T, cache *toolcache.Cache) map[string]float64 {
	t.Helper()
	snap, err := cache.ToolSet(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := snap.CallServerTool(context.Background(), "jobs", "job_stats", dispatch.Request{UserID: "alice", ThreadID: "t1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		StructuredContent map[string]float64 `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("job_stats = %s: %v", raw, err)
	}
	return res.StructuredContent
}

func resultText(t *testing.T, row taskstore.Task) string {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(row.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("result = %s (%v), want a CallToolResult", row.Result, err)
	}
	return res.Content[0].Text
}

// TestJobCompletesAsExtensionTask: long_job answers with a task handle, the
// service polls tasks/get and stores the result inlined in it.
func TestJobCompletesAsExtensionTask(t *testing.T) {
	for _, tr := range extTransports {
		t.Run(tr.name, func(t *testing.T) {
			rt := testtask.New(t, jobsDoc(tr.server(t)), testtask.FastConfig())
			tool := jobsTool(t, rt.Cache)
			rt.Service.Start()
			id := submit(t, rt.Service, tool, `{"topic": "gateways", "poll_ms": 50}`)
			row := waitStatus(t, rt.Store, id, task.StatusCompleted)
			if got := resultText(t, row); !strings.Contains(got, "# Report: gateways") {
				t.Errorf("report = %q", got)
			}
			if row.DriverName != spectasks.ExtensionName || strings.HasPrefix(row.RemoteTaskID, spectasks.InlinePrefix) {
				t.Errorf("driver %q, remote id %q; want %q with the server's task", row.DriverName, row.RemoteTaskID, spectasks.ExtensionName)
			}
			if strings.Contains(string(row.Result), "resultType") {
				t.Errorf("result %s keeps the protocol's resultType", row.Result)
			}
		})
	}
}

// TestInlineAnswerCompletesAtOnce: the server decides per call; a call it
// answers with the result is a task completed when it is created.
func TestInlineAnswerCompletesAtOnce(t *testing.T) {
	rt := testtask.New(t, jobsDoc(extTransports[1].server(t)), testtask.FastConfig())
	tool := jobsTool(t, rt.Cache)
	rt.Service.Start()
	id := submit(t, rt.Service, tool, `{"topic": "quick", "inline": true}`)
	row, err := rt.Store.Get(context.Background(), id, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != task.StatusCompleted || row.RemoteTaskID != spectasks.InlinePrefix+id || !strings.Contains(resultText(t, row), "# Report: quick") {
		t.Errorf("task %s, remote id %q, result %s; want completed at once with the report", row.Status, row.RemoteTaskID, row.Result)
	}
	res, err := tasktools.New(rt.Service, nil).Submit(context.Background(), tool, dispatch.Request{
		UserID: "alice", ThreadID: "t1", Arguments: json.RawMessage(`{"topic": "quicker", "inline": true}`)})
	sc, _ := res["structuredContent"].(map[string]any)
	if got, _ := json.Marshal(sc["result"]); err != nil || sc["status"] != "completed" || !strings.Contains(string(got), "# Report: quicker") {
		t.Errorf("submit = %v (%v), want the result at once", res, err)
	}
	if st := jobStats(t, rt.Cache); st["inline"] != 2 || st["creates"] != 0 {
		t.Errorf("stats %v, want one inline answer and no task", st)
	}
}

// TestAnswerResumesJob: a job that asks for input is input_required with
// the elicitation as its question; the driver's Answer sends tasks/update
// keyed by the input request, and the job completes with the answer. A
// resent update (a delivery repeated after a crash) is ignored by the server.
func TestAnswerResumesJob(t *testing.T) {
	for _, tr := range extTransports {
		t.Run(tr.name, func(t *testing.T) {
			// The answers' own delivery stores Answer's snapshot; here the
			// service sees the task resume at its next input_required poll.
			cfg := testtask.FastConfig()
			cfg.InputRequiredPollIntervalSeconds = 5
			rt := testtask.New(t, jobsDoc(tr.server(t)), cfg)
			tool := jobsTool(t, rt.Cache)
			rt.Service.Start()
			id := submit(t, rt.Service, tool, `{"topic": "answers", "ask": true, "poll_ms": 50}`)
			row := waitStatus(t, rt.Store, id, task.StatusInputRequired)
			var q struct {
				Key     string          `json:"input_request_id"`
				Message string          `json:"message"`
				Schema  json.RawMessage `json:"requestedSchema"`
			}
			if err := json.Unmarshal(row.InputRequired, &q); err != nil || q.Key != "format" || !strings.Contains(q.Message, "Which format") || len(q.Schema) == 0 {
				t.Fatalf("question = %s (%v), want the format elicitation", row.InputRequired, err)
			}
			drv := spectasks.NewExtension(taskservice.SpecCaller{Cache: rt.Cache}, spectasks.Options{})
			ref := reference(t, row)
			ans := task.Answer{Action: "accept", Content: json.RawMessage(`{"format":"pdf"}`), ID: "answer-1"}
			snap, err := drv.Answer(context.Background(), ref, row.InputRequired, ans)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Status == task.StatusInputRequired || snap.DriverData[spectasks.AnsweredPrefix+"format"] != "answer-1" {
				t.Errorf("after the answer: %+v, want the task past the question and the answer recorded", snap)
			}
			// The same delivery again, from driver data that never recorded it.
			if _, err := drv.Answer(context.Background(), ref, row.InputRequired, ans); err != nil {
				t.Fatal(err)
			}
			// And from driver data that did: not sent at all.
			ref.DriverData = snap.DriverData
			if _, err := drv.Answer(context.Background(), ref, row.InputRequired, ans); err != nil {
				t.Fatal(err)
			}
			row = waitStatus(t, rt.Store, id, task.StatusCompleted)
			if got := resultText(t, row); !strings.Contains(got, "Format: pdf") {
				t.Errorf("report = %q, want the answer in it", got)
			}
			if st := jobStats(t, rt.Cache); st["updates_applied"] != 1 || st["updates_ignored"] != 1 {
				t.Errorf("stats %v, want the update applied once and the resent one ignored", st)
			}
		})
	}
}

// TestJobCancels: tasks/cancel is an acknowledgement; the driver reads the
// task until it is terminal. A server that runs on after the
// acknowledgement ends the task as it ends (here completed).
func TestJobCancels(t *testing.T) {
	tests := []struct {
		name, args string
		want       task.Status
	}{
		{"honoured", `{"topic": "cancel me", "duration_ms": 600000}`, task.StatusCancelled},
		{"ignored", `{"topic": "stubborn", "duration_ms": 1500, "ignore_cancel": true, "poll_ms": 50}`, task.StatusCompleted},
	}
	for _, tr := range extTransports {
		for _, tt := range tests {
			t.Run(tr.name+"/"+tt.name, func(t *testing.T) {
				rt := testtask.New(t, jobsDoc(tr.server(t)), testtask.FastConfig())
				tool := jobsTool(t, rt.Cache)
				rt.Service.Start()
				id := submit(t, rt.Service, tool, tt.args)
				row, err := rt.Service.Cancel(context.Background(), id, task.Scope{User: "alice", Thread: "t1"})
				if err != nil {
					t.Fatalf("cancel: %v", err)
				}
				if row.Status != tt.want {
					row = waitStatus(t, rt.Store, id, tt.want)
				}
				if st := jobStats(t, rt.Cache); st["cancels"] < 1 {
					t.Errorf("stats %v, want a tasks/cancel", st)
				}
			})
		}
	}
}

// TestJobSurvivesHostRestart submits on one host, which then stops polling
// (a crash), and polls from a new host over the same SQLite file: it
// continues the task by its persisted id. Over stdio the new host's child
// is a new process that resumes the job from its state file.
func TestJobSurvivesHostRestart(t *testing.T) {
	for _, tr := range extTransports {
		t.Run(tr.name, func(t *testing.T) {
			config := jobsDoc(tr.server(t))
			dbPath := filepath.Join(t.TempDir(), "tasks.db")
			first := host(t, config, dbPath)
			first.svc.Start()
			id := submit(t, first.svc, jobsTool(t, first.cache), `{"topic": "restarts", "duration_ms": 1000, "poll_ms": 50}`)
			first.svc.Stop()
			first.cache.Close()

			second := host(t, config, dbPath)
			jobsTool(t, second.cache)
			second.svc.Start()
			row := waitStatus(t, second.store, id, task.StatusCompleted)
			if got := resultText(t, row); !strings.Contains(got, "# Report: restarts") {
				t.Errorf("report = %q", got)
			}
		})
	}
}

// TestJobExpiresWithItsTTL: a server forgets a task after its ttlMs; the
// poll that finds it gone fails the task for good with the server's word.
func TestJobExpiresWithItsTTL(t *testing.T) {
	rt := testtask.New(t, jobsDoc(extTransports[1].server(t)), testtask.FastConfig())
	tool := jobsTool(t, rt.Cache)
	rt.Service.Start()
	id := submit(t, rt.Service, tool, `{"topic": "ephemeral", "duration_ms": 600000, "ttl_ms": 100}`)
	row := waitStatus(t, rt.Store, id, task.StatusFailed)
	if !strings.Contains(row.Error, "Task has expired") {
		t.Errorf("error = %q, want the server's expiry", row.Error)
	}
}

// TestExtensionOptOut: with spec_tasks "off" the server's tools are plain,
// and a plain call of a tool the server only runs as a task is refused
// (-32021) because it did not declare the extension.
func TestExtensionOptOut(t *testing.T) {
	server := fmt.Sprintf(`{"command": %q, "spec_tasks": "off"}`, testmcp.BuildTasks2026(t))
	rt := testtask.New(t, jobsDoc(server), testtask.FastConfig())
	snap, err := rt.Cache.ToolSet(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := snap.Tool(jobExposed)
	if !ok || tool.IsDurable() || strings.Contains(tool.Description, "durable background task") {
		t.Fatalf("tool %+v (listed %v), want a plain tool", tool, ok)
	}
	_, err = snap.Invoke(context.Background(), dispatch.Request{Name: jobExposed, Arguments: json.RawMessage(`{"topic":"x"}`), UserID: "alice", ThreadID: "t1"})
	if err == nil || !strings.Contains(err.Error(), "Missing required client capability") {
		t.Errorf("plain call: %v, want -32021", err)
	}
}

// TestAnswerThroughTheService: the user's answer, recorded by the task
// service (what POST .../mcp-tasks/{task_id}/input does), is delivered by
// the background loop through the 2026-07-28 driver's tasks/update, once,
// and the job completes with it.
func TestAnswerThroughTheService(t *testing.T) {
	for _, tr := range extTransports {
		t.Run(tr.name, func(t *testing.T) {
			rt := testtask.New(t, jobsDoc(tr.server(t)), testtask.FastConfig())
			tool := jobsTool(t, rt.Cache)
			rt.Service.Start()
			id := submit(t, rt.Service, tool, `{"topic": "answers", "ask": true, "poll_ms": 50}`)
			row := waitStatus(t, rt.Store, id, task.StatusInputRequired)
			if !rt.Service.CanAnswer(row) {
				t.Fatal("the service says a 2026-07-28 task cannot take answers")
			}
			if _, err := rt.Service.Answer(context.Background(), id, task.Scope{User: "alice", Thread: "t1"}, task.Answer{Action: "accept", Content: json.RawMessage(`{"format":"pdf"}`)}); err != nil {
				t.Fatal(err)
			}
			row = waitStatus(t, rt.Store, id, task.StatusCompleted)
			if got := resultText(t, row); !strings.Contains(got, "Format: pdf") {
				t.Errorf("report = %q, want the answer in it", got)
			}
			if st := jobStats(t, rt.Cache); st["updates_applied"] != 1 {
				t.Errorf("stats %v, want the update applied once", st)
			}
		})
	}
}
