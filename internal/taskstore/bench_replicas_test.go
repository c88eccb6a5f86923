package taskstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/taskstore"
)

// replicaBacklog is how many tasks are due when the two replicas start.
const replicaBacklog = 20000

// BenchmarkClaimTwoReplicas measures claim throughput (claims/s: rows
// claimed per second, all replicas together) of replicas draining a backlog
// of 20,000 due tasks, 100 per claim. Each replica runs its poll loop's
// database side in one goroutine: claim a batch, write it back (ApplyState
// per row, concurrently, as Service.runPolls does; the remote calls are left
// out), claim again, until a claim comes back empty. One op is one drain of
// the whole backlog; claim-ms is the mean time of one ClaimDue under that
// load. replicas=1 is the baseline for replicas=2.
//
// Each replica is its own Store: a second taskstore.Open on the same database
// is a second connection pool, as a second host process would have. On
// Postgres that is exactly two replicas. On SQLite two replicas are two
// processes on one file; two Stores in one process on the same file take the
// same file locks through separate connections (each Store has its own writer
// connection), so they contend for the single SQLite writer just as two
// processes would.
//
// A written-back row is due again only after the drain, and every drain runs
// at its own clock, two hours after the last, so the previous drain's leases
// have expired and the whole backlog is due again. Within a drain each row
// must be claimed exactly once: a row claimed twice (while another replica
// held its lease, or after its write-back) or never fails the benchmark, as
// does a write-back fenced off its lease. These are correctness checks;
// nothing here asserts a time.
func BenchmarkClaimTwoReplicas(b *testing.B) {
	for _, engine := range benchEngines {
		b.Run(engine.name, func(b *testing.B) {
			dsn, target := engine.dsn(b)
			stores := []*taskstore.Store{openStore(b, dsn), openStore(b, dsn)}
			seedDue(b, stores[0], replicaBacklog)
			analyze(b, engine.driver, target)
			now := benchEpoch()
			for _, n := range []int{1, 2} {
				b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
					var total drainStats
					for b.Loop() {
						now = now.Add(2 * time.Hour)
						d := drain(b, stores[:n], now)
						total.byFirst += d.byFirst
						total.claims += d.claims
						total.claimTime += d.claimTime
					}
					b.ReportMetric(float64(replicaBacklog*b.N)/b.Elapsed().Seconds(), "claims/s")
					b.ReportMetric(float64(total.claimTime.Microseconds())/1000/float64(total.claims), "claim-ms")
					if n > 1 {
						b.ReportMetric(100*float64(total.byFirst)/float64(replicaBacklog*b.N), "%by-replica-a")
					}
				})
			}
		})
	}
}

// drainStats describe one drain: rows the first replica claimed, ClaimDue
// calls and the time spent in them.
type drainStats struct {
	byFirst   int
	claims    int
	claimTime time.Duration
}

// drain lets the replicas claim and write back concurrently at now until the
// backlog is gone, and fails unless every row was claimed exactly once.
func drain(b *testing.B, replicas []*taskstore.Store, now time.Time) drainStats {
	var (
		mu      sync.Mutex
		claimed = make(map[string]string, replicaBacklog) // id → owner, for this drain
		stats   drainStats
		wg      sync.WaitGroup
		start   = make(chan struct{})
	)
	for i, s := range replicas {
		owner := fmt.Sprintf("replica-%c", 'a'+i)
		wg.Go(func() {
			<-start
			for {
				began := time.Now()
				tasks, err := s.ClaimDue(context.Background(), now, owner, time.Hour, 100)
				took := time.Since(began)
				if err != nil {
					b.Errorf("%s: ClaimDue: %v", owner, err)
					return
				}
				mu.Lock()
				stats.claims++
				stats.claimTime += took
				for _, t := range tasks {
					if prev, dup := claimed[t.ID]; dup {
						b.Errorf("%s claimed %s, already claimed in this drain by %s", owner, t.ID, prev)
					}
					claimed[t.ID] = owner
				}
				if i == 0 {
					stats.byFirst += len(tasks)
				}
				mu.Unlock()
				if len(tasks) == 0 {
					return
				}
				// Due again after this drain: one millisecond later.
				applyAll(b, s, tasks, owner, now)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(claimed) != replicaBacklog {
		b.Errorf("claimed %d distinct rows, want %d", len(claimed), replicaBacklog)
	}
	if b.Failed() {
		b.FailNow()
	}
	return stats
}

// seedDue stores n pollable tasks, all due at the bench epoch.
func seedDue(b *testing.B, s *taskstore.Store, n int) {
	b.Helper()
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				nt := taskstore.NewTask{
					ID: fmt.Sprintf("task-%06d", i), UserID: "user", ThreadID: fmt.Sprintf("thread-%d", i%50),
					ServerName: "reports", DriverName: "ordinary-tools", RemoteTaskID: fmt.Sprintf("remote-%d", i),
					TaskName: "report", State: taskstore.State{Status: "working"},
					NextPollAt: benchEpoch().Add(-time.Second),
				}
				if _, err := s.Create(context.Background(), nt, benchEpoch().Add(-time.Hour)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}
