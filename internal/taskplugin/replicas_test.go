package taskplugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/testtask"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskplugin"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/taskstore/storetest"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// pluginReplica is one host on the shared store: its own tool cache, its
// own loaded plugin driver and its own task service.
func pluginReplica(t *testing.T, cfgPath, dsn string, cfg task.Config) (*taskservice.Service, *taskstore.Store, *toolcache.Cache) {
	t.Helper()
	rt := testtask.Open(t, testtask.Options{ConfigPath: cfgPath, DSN: dsn, Config: cfg})
	if rt.Drivers == nil {
		t.Fatal("the config's plugin driver was not loaded")
	}
	return rt.Service, rt.Store, rt.Cache
}

// TestTwoReplicasWithAPluginDriver runs two hosts on one Postgres task table,
// each with its own instance of the example driver (Wasm in one, a process
// in the other), against one jobs server over HTTP: every task completes,
// no job is ever polled by both hosts at once (the server counts concurrent
// job_state calls per job), and a completed job is not polled again.
func TestTwoReplicasWithAPluginDriver(t *testing.T) {
	dsn := storetest.PostgresSchema(t, storetest.PostgresURL(t))
	url := testmcp.StartBinaryHTTP(t, testmcp.BuildJobs(t), "jobs server", "http")
	write := func(name, driver string) string {
		p := filepath.Join(t.TempDir(), name)
		doc := fmt.Sprintf(`{"mcpServers": {"jobs": {"type": "http", "url": %q, "task_toolsets": [{"name": "jobs",
		  "submit_tool": "enqueue", "status_tool": "job_state", "cancel_tool": "abort_job", "driver": %s}]}}}`, url+"/mcp", driver)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := task.DefaultConfig()
	cfg.Enabled, cfg.PollIntervalSeconds, cfg.LeaseSeconds = true, 1, 5
	a, storeA, cacheA := pluginReplica(t, write("a.json", carriers[0].entry(t, exampleDriver, 10000)), dsn, cfg)
	b, _, _ := pluginReplica(t, write("b.json", carriers[1].entry(t, exampleDriver, 10000)), dsn, cfg)

	name := taskplugin.Name("jobs", "jobs")
	var ids []string
	for i := range 8 {
		row, err := a.Submit(context.Background(), name, task.SubmitRequest{
			UserID: "alice", ThreadID: "t1", ServerName: "jobs", TaskName: "jobs",
			Arguments:  json.RawMessage(fmt.Sprintf(`{"payload": "p%d", "steps": 3, "state_delay_ms": 300}`, i)),
			DriverData: ordinary.DriverData("enqueue", "job_state", "abort_job"),
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row.ID)
	}
	a.Start()
	b.Start()

	for _, id := range ids {
		var row taskstore.Task
		eventually.Check(t, fmt.Sprintf("task %s to complete", id), func() (bool, string) {
			var err error
			row, err = storeA.Get(context.Background(), id, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if row.Status == "failed" {
				t.Fatalf("task %s failed: %s", id, row.LastPollError)
			}
			return row.Status == "completed", fmt.Sprintf("%s (%s)", row.Status, row.LastPollError)
		})
		if len(row.Result) == 0 {
			t.Errorf("task %s completed without its result", id)
		}
	}
	stats := func() (int, map[string]int) {
		snap, err := cacheA.ToolSet(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := snap.Call(context.Background(), "jobs_job_stats", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			StructuredContent struct {
				MaxConcurrentState int            `json:"max_concurrent_state"`
				PerJob             map[string]int `json:"state_calls_per_job"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		return res.StructuredContent.MaxConcurrentState, res.StructuredContent.PerJob
	}
	maxIn, before := stats()
	if maxIn > 1 {
		t.Errorf("a job was polled %d times at once by the two hosts", maxIn)
	}
	// The proof that polling went on past the completions: a sentinel job
	// submitted now is polled twice, so at least two claims of due tasks
	// ran after every completion, and would have picked up a completed job
	// were it claimable.
	sentinel, err := a.Submit(context.Background(), name, task.SubmitRequest{
		UserID: "alice", ThreadID: "t1", ServerName: "jobs", TaskName: "sentinel",
		Arguments:  json.RawMessage(`{"payload": "sentinel", "steps": 1000}`),
		DriverData: ordinary.DriverData("enqueue", "job_state", "abort_job"),
	})
	if err != nil {
		t.Fatal(err)
	}
	testtask.Await(t, storeA, sentinel.ID, "alice", "two polls of the sentinel job", func(row taskstore.Task) bool { return row.PollAttemptCount >= 2 })
	_, after := stats()
	delete(after, sentinel.RemoteTaskID)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("completed jobs were polled again: %v → %v", before, after)
	}
}
