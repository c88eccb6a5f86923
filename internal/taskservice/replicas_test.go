package taskservice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/testtask"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/taskstore/storetest"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// replica is one host: its own tool cache, store connection and service.
func replica(t testing.TB, cfgPath, dsn string, cfg task.Config) (*taskservice.Service, *taskstore.Store, *toolcache.Cache) {
	t.Helper()
	return notifyingReplica(t, cfgPath, dsn, cfg, nil)
}

// notifyingReplica is a replica that delivers task events through notifier.
func notifyingReplica(t testing.TB, cfgPath, dsn string, cfg task.Config, notifier tasknotify.Notifier) (*taskservice.Service, *taskstore.Store, *toolcache.Cache) {
	t.Helper()
	rt := testtask.Open(t, testtask.Options{ConfigPath: cfgPath, DSN: dsn, Config: cfg, Notifier: notifier})
	return rt.Service, rt.Store, rt.Cache
}

// TestTwoReplicasOnOnePostgres runs two hosts on one Postgres task table
// against one reports server: every task completes, no task is ever polled
// by both at once (the server counts concurrent status calls per task), and
// each completion is written exactly once.
func TestTwoReplicasOnOnePostgres(t *testing.T) {
	dsn := storetest.PostgresSchema(t, storetest.PostgresURL(t))
	cfgPath := httpReports(t)
	cfg := fastConfig()
	cfg.LeaseSeconds = 5
	a, storeA, cacheA := replica(t, cfgPath, dsn, cfg)
	b, _, _ := replica(t, cfgPath, dsn, cfg)

	var ids []string
	for i := range 12 {
		row, err := a.Submit(context.Background(), ordinary.Name, task.SubmitRequest{
			UserID: "alice", ThreadID: "t1", ServerName: "reports", TaskName: fmt.Sprintf("report %d", i),
			Arguments:  json.RawMessage(`{"topic": "x", "delay_ms": 1500, "slow_status_ms": 400}`),
			DriverData: ordinary.DriverData("submit_report", "get_report_status", "cancel_report"),
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
			return row.Status == "completed", string(row.Status)
		})
		if row.CompletedAt.IsZero() || len(row.Result) == 0 {
			t.Errorf("task %s completed without its result", id)
		}
	}

	stats := serverStats(t, cacheA, "alice")
	for remote, s := range stats.PerTask {
		if s.MaxConcurrentStatus > 1 {
			t.Errorf("remote task %s was polled %d times at once by the two hosts", remote, s.MaxConcurrentStatus)
		}
	}
	// Each completion was written once: after it, no further status call
	// may follow (a terminal task is never claimed again).
	before := map[string]int{}
	for remote, s := range stats.PerTask {
		before[remote] = s.StatusCalls
	}
	// The proof that polling went on past the completions: a sentinel task
	// submitted now is polled twice, so at least two claims of due tasks
	// ran after every completion, and would have picked up a completed
	// task were it claimable.
	sentinel, err := a.Submit(context.Background(), ordinary.Name, task.SubmitRequest{
		UserID: "alice", ThreadID: "t1", ServerName: "reports", TaskName: "sentinel",
		Arguments:  json.RawMessage(`{"topic": "sentinel", "delay_ms": 600000}`),
		DriverData: ordinary.DriverData("submit_report", "get_report_status", "cancel_report"),
	})
	if err != nil {
		t.Fatal(err)
	}
	testtask.Await(t, storeA, sentinel.ID, "alice", "two polls of the sentinel task", func(row taskstore.Task) bool { return row.PollAttemptCount >= 2 })
	for remote, s := range serverStats(t, cacheA, "alice").PerTask {
		if remote != sentinel.RemoteTaskID && s.StatusCalls != before[remote] {
			t.Errorf("completed remote task %s was polled again (%d → %d)", remote, before[remote], s.StatusCalls)
		}
	}
}
