package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// hangConfig is fastConfig where no call times out during a test and a
// user may have 1000 active tasks.
func hangConfig() task.Config {
	cfg := fastConfig()
	cfg.LeaseSeconds, cfg.StatusCallTimeoutSeconds = 3600, 3000
	cfg.MaxActiveTasksPerUser = 1000
	return cfg
}

// bobCompletes submits bob's quick task and waits until it has completed.
func bobCompletes(t *testing.T, svc *taskservice.Service, store *taskstore.Store) taskstore.Task {
	t.Helper()
	ctx := context.Background()
	bob, err := submitAs(ctx, svc, "bob", `{"topic": "b", "delay_ms": 0}`)
	if err != nil {
		t.Fatal(err)
	}
	eventually.Check(t, "bob's task to complete", func() (bool, string) {
		row, err := store.Get(ctx, bob.ID, "bob")
		if err != nil {
			t.Fatal(err)
		}
		return row.Status == "completed", string(row.Status)
	})
	return bob
}

// cancelAndWait cancels user's task id and waits until the cancel is applied.
func cancelAndWait(t *testing.T, svc *taskservice.Service, store *taskstore.Store, id, user string) {
	t.Helper()
	ctx := context.Background()
	if _, err := svc.Cancel(ctx, id, task.Scope{User: user, Thread: "t1"}); err != nil {
		t.Fatal(err)
	}
	eventually.Check(t, "the cancellation", func() (bool, string) {
		row, err := store.Get(ctx, id, user)
		if err != nil {
			t.Fatal(err)
		}
		return row.Status == "cancelled", string(row.Status)
	})
}

// TestHungUpstreamOfOneUserDoesNotHoldUpAnother performs the attack: alice
// has 300 active tasks whose status calls hang on the shared upstream, bob
// submits one. Bob's task must be polled and completed while alice's hung
// calls are still blocked on the server, and alice's calls in flight never
// exceed her share of the pool.
func TestHungUpstreamOfOneUserDoesNotHoldUpAnother(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			cfg := hangConfig()
			svc, store, cache := replica(t, httpReports(t), engine.dsn(t), cfg)
			ctx := context.Background()

			var wg sync.WaitGroup
			for w := range 10 {
				wg.Go(func() {
					for range 30 {
						if _, err := submitAs(ctx, svc, "alice", `{"topic": "a", "delay_ms": 0, "hang_status_calls": 1000000}`); err != nil {
							t.Errorf("submitter %d: %v", w, err)
							return
						}
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			svc.Start()
			share := cfg.PollShare()
			eventually.Check(t, "alice's hung status calls to fill her share", func() (bool, string) {
				s := serverStats(t, cache, "stats")
				return s.InFlightStatus == share, fmt.Sprintf("%d in flight", s.InFlightStatus)
			})

			bob := bobCompletes(t, svc, store)
			s := serverStats(t, cache, "stats")
			if s.InFlightStatus != share {
				t.Errorf("after bob's task completed, %d status calls are in flight, want alice's %d still blocked", s.InFlightStatus, share)
			}
			blocked := 0
			for remote, ts := range s.PerTask {
				if ts.MaxConcurrentStatus > 1 {
					t.Errorf("remote task %s was polled %d times at once", remote, ts.MaxConcurrentStatus)
				}
				if ts.StatusCalls > 0 && remote != bob.RemoteTaskID {
					blocked++
				}
			}
			if blocked != share {
				t.Errorf("%d of alice's tasks were polled, want exactly her share %d (each still blocked)", blocked, share)
			}
		})
	}
}

// TestHungStatusCallTimesOutAndIsRetried: a status call that never answers
// ends at status_call_timeout_seconds as a counted, retryable poll failure
// (tracking_degraded as ever), and the task is polled again and completes.
func TestHungStatusCallTimesOutAndIsRetried(t *testing.T) {
	cfg := fastConfig()
	cfg.StatusCallTimeoutSeconds = 1
	cfg.MaxPollBackoffSeconds = 1
	r := newRig(t, cfg)
	row := r.submit(`{"topic": "x", "delay_ms": 0, "hang_status_calls": 3}`)
	var got taskstore.Task
	eventually.Check(t, "three timed-out polls", func() (bool, string) {
		if err := r.svc.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		var err error
		if got, err = r.store.Get(context.Background(), row.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		return got.ConsecutivePollErrorCount >= 3 || got.Status != "submitted", fmt.Sprintf("%d errors", got.ConsecutivePollErrorCount)
	})
	if got.Status != "submitted" || got.LastPollError != "MCP task status call timed out after 1s" || got.EventVersion != 1 {
		t.Fatalf("after three hung polls: status %s, last error %q, event version %d; want submitted, the timeout, a tracking_degraded event",
			got.Status, got.LastPollError, got.EventVersion)
	}
	done := r.pollUntil(row.ID, "completed")
	if done.ConsecutivePollErrorCount != 0 || len(done.Result) == 0 {
		t.Errorf("completed after the timeouts: %d errors, result %s", done.ConsecutivePollErrorCount, done.Result)
	}
	if statuses, _ := r.stats(); statuses != 4 {
		t.Errorf("status calls = %d, want 4 (three hung, one answered)", statuses)
	}
}

// capped is a replica on dsn and a fresh reports server with
// max_active_tasks_per_user limit, where alice already has n long tasks.
func capped(t *testing.T, dsn string, limit, n int) (*taskservice.Service, *taskstore.Store, *toolcache.Cache, []taskstore.Task) {
	t.Helper()
	cfg := fastConfig()
	cfg.MaxActiveTasksPerUser = limit
	svc, store, cache := replica(t, httpReports(t), dsn, cfg)
	var rows []taskstore.Task
	for i := range n {
		row, err := submitAs(context.Background(), svc, "alice", `{"topic": "a", "delay_ms": 600000}`)
		if err != nil {
			t.Fatalf("submit %d: %v", i+1, err)
		}
		rows = append(rows, row)
	}
	return svc, store, cache, rows
}

// TestActiveTaskCap: the (cap+1)th submit of one user is refused with a
// model-safe message before it reaches the upstream (no remote job, no
// row), another user's submit still works, and a finished task frees its
// slot.
func TestActiveTaskCap(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			svc, store, cache, active := capped(t, engine.dsn(t), 3, 3)
			ctx := context.Background()
			first := active[0]
			_, err := submitAs(ctx, svc, "alice", `{"topic": "a", "delay_ms": 0}`)
			var le *taskstore.ActiveTaskLimitError
			if !errors.As(err, &le) || le.Limit != 3 {
				t.Fatalf("fourth submit: %v, want an ActiveTaskLimitError", err)
			}
			const msg = "You already have 3 active background tasks, the most one user may run at once. Wait for one to finish, or cancel one, before starting another."
			if err.Error() != msg {
				t.Errorf("message = %q", err.Error())
			}
			if s := serverStats(t, cache, "stats"); s.Submits != 3 {
				t.Errorf("the upstream saw %d submits, want 3: the refused one reached it", s.Submits)
			}
			if rows, err := store.ListByThread(ctx, task.Scope{User: "alice", Thread: "t1"}, 10, false); err != nil || len(rows) != 3 {
				t.Errorf("alice has %d task rows (%v), want 3", len(rows), err)
			}
			if _, err := submitAs(ctx, svc, "bob", `{"topic": "b", "delay_ms": 0}`); err != nil {
				t.Errorf("bob's submit: %v", err)
			}

			svc.Start()
			cancelAndWait(t, svc, store, first.ID, "alice")
			if _, err := submitAs(ctx, svc, "alice", `{"topic": "a", "delay_ms": 0}`); err != nil {
				t.Errorf("submit after a task ended: %v", err)
			}
		})
	}
}

// TestConcurrentSubmitsAtTheCap races 8 submits of one user for the last
// free slot: exactly one reaches the upstream and is stored.
func TestConcurrentSubmitsAtTheCap(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			svc, store, cache, _ := capped(t, engine.dsn(t), 5, 4)
			ctx := context.Background()
			var (
				wg              sync.WaitGroup
				mu              sync.Mutex
				stored, refused int
				start           = make(chan struct{})
			)
			for range 8 {
				wg.Go(func() {
					<-start
					_, err := submitAs(ctx, svc, "alice", `{"topic": "a", "delay_ms": 600000}`)
					var le *taskstore.ActiveTaskLimitError
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						stored++
					case errors.As(err, &le):
						refused++
					default:
						t.Errorf("submit: %v", err)
					}
				})
			}
			close(start)
			wg.Wait()
			if stored != 1 || refused != 7 {
				t.Errorf("%d submits stored and %d refused, want 1 and 7", stored, refused)
			}
			if s := serverStats(t, cache, "stats"); s.Submits != 5 {
				t.Errorf("the upstream saw %d submits, want 5", s.Submits)
			}
			if rows, err := store.ListByThread(ctx, task.Scope{User: "alice", Thread: "t1"}, 20, true); err != nil || len(rows) != 5 {
				t.Errorf("alice has %d active rows (%v), want 5", len(rows), err)
			}
		})
	}
}
