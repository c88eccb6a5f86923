package taskservice_test

import (
	"context"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// cancelPolled performs the attack's second half until stop closes: it
// cancels each of alice's tasks as soon as its poll is claimed, through
// cancel (which clears the poll's lease in the store).
func cancelPolled(t *testing.T, store *taskstore.Store, ids []string, cancel func(id string) error, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		done := map[string]bool{}
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, id := range ids {
				if done[id] {
					continue
				}
				row, err := store.Get(context.Background(), id, "alice")
				if err != nil {
					t.Error(err)
					return
				}
				if row.LeaseToken != "" && row.PollAttemptCount > 0 {
					if err := cancel(id); err != nil {
						t.Errorf("cancel %s: %v", id, err)
						return
					}
					done[id] = true
				}
			}
		}
	})
	return &wg
}

// TestCancelledHungPollsStillCountAgainstTheShare performs the attack: alice
// submits tasks whose status calls hang and cancels each as soon as its poll
// is claimed, which clears its lease, so the store no longer counts the poll
// against her share. Bob's task must still complete. When the cancel comes
// from another replica, the hung calls keep running here: alice must never
// have more than her share of them in flight (and no more of her tasks are
// polled). When it comes through this service, the hung call is ended at once.
func TestCancelledHungPollsStillCountAgainstTheShare(t *testing.T) {
	for _, engine := range engines {
		for _, here := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cancelled_here=%v", engine.name, here), func(t *testing.T) {
				cfg := hangConfig()
				svc, store, cache := replica(t, httpReports(t), engine.dsn(t), cfg)
				ctx := context.Background()
				share := cfg.PollShare()
				var ids []string
				for range 3 * share {
					row, err := submitAs(ctx, svc, "alice", `{"topic": "a", "delay_ms": 0, "hang_status_calls": 1000000}`)
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, row.ID)
				}
				cancel := func(id string) error {
					_, err := store.RequestCancel(ctx, id, task.Scope{User: "alice", Thread: "t1"}, time.Now())
					return err
				}
				if here {
					cancel = func(id string) error {
						_, err := svc.Cancel(ctx, id, task.Scope{User: "alice", Thread: "t1"})
						return err
					}
				}
				svc.Start()
				stop := make(chan struct{})
				attack := cancelPolled(t, store, ids, cancel, stop)
				defer attack.Wait()
				defer close(stop)

				cancelled := func() int {
					n := 0
					for _, id := range ids {
						row, err := store.Get(ctx, id, "alice")
						if err != nil {
							t.Fatal(err)
						}
						if !row.CancelRequestedAt.IsZero() {
							n++
						}
					}
					return n
				}
				want := share // from another replica, the hung calls keep alice's share busy
				if here {
					want = 2 * share // here, each cancel gives its worker back for her next task
				}
				eventually.Check(t, "alice's polled tasks to be cancelled", func() (bool, string) {
					n := cancelled()
					return n >= want, fmt.Sprintf("%d cancelled", n)
				})

				bob := bobCompletes(t, svc, store)
				if here {
					return
				}
				s := serverStats(t, cache, "stats")
				if s.InFlightStatus != share {
					t.Errorf("%d status calls in flight, want alice's %d hung ones (her share) and no more", s.InFlightStatus, share)
				}
				polled := 0
				for remote, ts := range s.PerTask {
					if ts.StatusCalls > 0 && remote != bob.RemoteTaskID {
						polled++
					}
				}
				if polled != share {
					t.Errorf("%d of alice's tasks were polled, want her share %d: her cancelled polls still hold their workers", polled, share)
				}
			})
		}
	}
}

// recorder is a Notifier that records the task of every event it is given.
type recorder struct {
	mu    sync.Mutex
	tasks map[string]bool
}

func (r *recorder) Notify(_ context.Context, e tasknotify.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tasks[e.TaskID] = true
	return nil
}

func (r *recorder) got(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tasks[id]
}

// TestHungCancelsOfOneUserDoNotHoldUpAnother performs the attack: alice
// cancels many tasks whose upstream hangs on cancel. Bob's completion must be
// delivered and his cancel applied while alice's hung cancels are still
// blocked on the server, and she never has more than her share of them.
func TestHungCancelsOfOneUserDoNotHoldUpAnother(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			cfg := hangConfig()
			notes := &recorder{tasks: map[string]bool{}}
			svc, store, cache := notifyingReplica(t, httpReports(t), engine.dsn(t), cfg, notes)
			ctx := context.Background()
			share := cfg.PollShare()
			var alice []taskstore.Task
			for range 3 * share {
				row, err := submitAs(ctx, svc, "alice", `{"topic": "a", "delay_ms": 600000, "hang_cancel_calls": 1000000}`)
				if err != nil {
					t.Fatal(err)
				}
				alice = append(alice, row)
			}
			svc.Start()
			for _, row := range alice {
				if _, err := svc.Cancel(ctx, row.ID, task.Scope{User: "alice", Thread: "t1"}); err != nil {
					t.Fatal(err)
				}
			}
			eventually.Check(t, "alice's hung cancels to fill her share", func() (bool, string) {
				s := serverStats(t, cache, "stats")
				return s.HungCancels == share, fmt.Sprintf("%d hung", s.HungCancels)
			})

			done, err := submitAs(ctx, svc, "bob", `{"topic": "b", "delay_ms": 0}`)
			if err != nil {
				t.Fatal(err)
			}
			long, err := submitAs(ctx, svc, "bob", `{"topic": "b", "delay_ms": 600000}`)
			if err != nil {
				t.Fatal(err)
			}
			cancelAndWait(t, svc, store, long.ID, "bob")
			eventually.Check(t, "bob's completion to be delivered", func() (bool, string) { return notes.got(done.ID), "not delivered" })
			if s := serverStats(t, cache, "stats"); s.HungCancels != share {
				t.Errorf("%d cancel calls hang, want alice's %d still blocked (her share, no more)", s.HungCancels, share)
			}
		})
	}
}
