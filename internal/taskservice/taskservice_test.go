package taskservice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// rig is a service over a real SQLite store and the real reports server
// (stdio, pooled per thread) reached through the tool cache.
type rig struct {
	t     *testing.T
	svc   *taskservice.Service
	store *taskstore.Store
	cache *toolcache.Cache
}

func newRig(t *testing.T, cfg task.Config) *rig {
	t.Helper()
	rt := testtask.New(t, fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, %s}}}`, testmcp.BuildReports(t), testtask.ReportsToolset), cfg)
	return &rig{t: t, svc: rt.Service, store: rt.Store, cache: rt.Cache}
}

func fastConfig() task.Config { return testtask.FastConfig() }

func (r *rig) submit(args string) taskstore.Task {
	r.t.Helper()
	row, err := r.svc.Submit(context.Background(), ordinary.Name, task.SubmitRequest{
		UserID: "alice", ThreadID: "t1", ServerName: "reports", TaskName: "Q3 report",
		Arguments:  json.RawMessage(args),
		DriverData: ordinary.DriverData("submit_report", "get_report_status", "cancel_report"),
	})
	if err != nil {
		r.t.Fatalf("submit: %v", err)
	}
	return row
}

// pollUntil runs passes (the clock moved past next_poll_at) until the task
// reaches status or the deadline passes.
func (r *rig) pollUntil(id string, status task.Status) taskstore.Task {
	r.t.Helper()
	var row taskstore.Task
	eventually.Check(r.t, fmt.Sprintf("task %s to be %s", id, status), func() (bool, string) {
		if err := r.svc.RunOnce(context.Background()); err != nil {
			r.t.Fatal(err)
		}
		var err error
		row, err = r.store.Get(context.Background(), id, "alice")
		if err != nil {
			r.t.Fatal(err)
		}
		return row.Status == status, fmt.Sprintf("%s (last error %q)", row.Status, row.LastPollError)
	})
	return row
}

// stats asks alice's reports process how often it was called.
func (r *rig) stats() (status, cancel int) {
	r.t.Helper()
	s := serverStats(r.t, r.cache, "alice")
	return s.StatusCalls, s.CancelCalls
}

func TestSubmittedReportCompletes(t *testing.T) {
	r := newRig(t, fastConfig())
	row := r.submit(`{"topic": "revenue", "delay_ms": 300}`)
	if row.Status != "submitted" || row.RemoteTaskID == "" {
		t.Fatalf("after submit: %+v", row.State)
	}
	done := r.pollUntil(row.ID, "completed")
	if len(done.Result) == 0 || done.CompletedAt.IsZero() || !done.NextPollAt.IsZero() {
		t.Errorf("completed task: result %s, completed_at %v, next_poll_at %v", done.Result, done.CompletedAt, done.NextPollAt)
	}
}

func TestPermanentAndRetryableFailures(t *testing.T) {
	r := newRig(t, fastConfig())
	gone := r.submit(`{"topic": "x", "not_found": true}`)
	row := r.pollUntil(gone.ID, "failed")
	if row.Error == "" {
		t.Error("a task_not_found task failed without an error")
	}
	flaky := r.submit(`{"topic": "x", "delay_ms": 0, "status_errors": 2}`)
	row = r.pollUntil(flaky.ID, "completed")
	if row.PollAttemptCount < 3 {
		t.Errorf("poll attempts %d: the isError answers were not retried", row.PollAttemptCount)
	}
}

func TestCancelTwiceCancelsOnceRemotely(t *testing.T) {
	r := newRig(t, fastConfig())
	if _, err := r.svc.Cancel(context.Background(), "mcp-task-x", task.Scope{User: "alice", Thread: "t1"}); err != taskservice.ErrNotRunning {
		t.Fatalf("cancel without a worker: %v, want ErrNotRunning", err)
	}
	r.svc.Start()
	row := r.submit(`{"topic": "x", "delay_ms": 60000}`)
	for range 2 {
		if _, err := r.svc.Cancel(context.Background(), row.ID, task.Scope{User: "alice", Thread: "t1"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually.Check(t, "the task to be cancelled", func() (bool, string) {
		got, err := r.store.Get(context.Background(), row.ID, "alice")
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == "cancelled", string(got.Status)
	})
	if _, cancels := r.stats(); cancels != 1 {
		t.Errorf("remote cancel calls = %d, want 1", cancels)
	}
	if _, err := r.svc.Cancel(context.Background(), row.ID, task.Scope{User: "bob", Thread: "t1"}); err == nil {
		t.Error("another user cancelled alice's task")
	}
}

// TestSlowStatusPastTheLeaseIsDiscarded: a status call that would outlive
// its claim's lease is given up before the lease expires (a retryable
// failure, released under the lease), and its answer is never written.
func TestSlowStatusPastTheLeaseIsDiscarded(t *testing.T) {
	cfg := fastConfig()
	cfg.LeaseSeconds = 1 // below the settings' range on purpose: the lease would expire mid-call
	r := newRig(t, cfg)
	row := r.submit(`{"topic": "x", "delay_ms": 0, "slow_status_ms": 1600}`)
	// The first poll is due one interval after submit, at the row's
	// next_poll_at: the pass below runs once that time has come.
	eventually.True(t, "the first poll to be due", func() bool { return !time.Now().Before(row.NextPollAt) })
	if err := r.svc.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := r.store.Get(context.Background(), row.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "submitted" {
		t.Errorf("a status answer that arrived after the lease expired was written: %s", got.Status)
	}
	if got.LastPollError != "MCP task status call timed out after 800ms" || got.ConsecutivePollErrorCount != 1 || got.LeaseOwner != "" {
		t.Errorf("poll past the lease: last error %q, %d errors, lease owner %q; want it given up at 4/5 of the lease and released",
			got.LastPollError, got.ConsecutivePollErrorCount, got.LeaseOwner)
	}
	if statuses, _ := r.stats(); statuses != 1 {
		t.Errorf("status calls = %d, want 1", statuses)
	}
}
