package taskstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/taskstore/storetest"
)

// BenchmarkClaimDue measures one claim pass (ns/op) over the same 100 due
// tasks among 1,000 and 10,000 stored ones. The rest are terminal or due in a
// year; with the (status, next_poll_at) index a pass reads the due rows only,
// so its cost must not grow with the stored count.
func BenchmarkClaimDue(b *testing.B) {
	for _, engine := range benchEngines {
		b.Run(engine.name, func(b *testing.B) {
			for _, stored := range []int{1000, 10000} {
				dsn, target := engine.dsn(b)
				s := openStore(b, dsn)
				seedForClaims(b, s, stored, 100)
				analyze(b, engine.driver, target)
				// Every pass runs a little later than the last with a 1 ms lease, so it
				// reclaims the same 100 rows, now expired, and nothing else.
				now := benchEpoch()
				b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
					ctx := context.Background()
					for b.Loop() {
						now = now.Add(2 * time.Millisecond)
						tasks, err := s.ClaimDue(ctx, now, "bench", time.Millisecond, 100)
						if err != nil {
							b.Fatal(err)
						}
						if len(tasks) != 100 {
							b.Fatalf("claimed %d tasks, want 100", len(tasks))
						}
					}
					b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "claims/s")
				})
			}
		})
	}
}

// BenchmarkPollPass measures the database side of one poll pass (ns/op) over
// the same 100 due tasks among 1,000 and 10,000 stored ones: the claim, then
// the 100 snapshot writes, each ApplyState in its own goroutine as
// Service.runPolls does. The remote status calls a real pass makes between
// the two are left out. Each snapshot is a working task with new progress
// (no notification event), due again 1 ms later, so the next pass claims the
// same 100 rows. claim-ms and apply-ms split a pass; neither should grow with
// the stored count.
func BenchmarkPollPass(b *testing.B) {
	for _, engine := range benchEngines {
		b.Run(engine.name, func(b *testing.B) {
			for _, stored := range []int{1000, 10000} {
				dsn, target := engine.dsn(b)
				s := openStore(b, dsn)
				seedForClaims(b, s, stored, 100)
				analyze(b, engine.driver, target)
				now := benchEpoch()
				b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
					ctx := context.Background()
					var claimTime, applyTime time.Duration
					for b.Loop() {
						now = now.Add(2 * time.Millisecond)
						start := time.Now()
						tasks, err := s.ClaimDue(ctx, now, "bench", time.Minute, 100)
						if err != nil {
							b.Fatal(err)
						}
						if len(tasks) != 100 {
							b.Fatalf("claimed %d tasks, want 100", len(tasks))
						}
						claimed := time.Now()
						applyAll(b, s, tasks, "bench", now)
						if b.Failed() {
							b.FailNow()
						}
						claimTime += claimed.Sub(start)
						applyTime += time.Since(claimed)
					}
					n := float64(b.N)
					b.ReportMetric(b.Elapsed().Seconds()*1000/n, "ms/pass")
					b.ReportMetric(float64(claimTime.Microseconds())/1000/n, "claim-ms")
					b.ReportMetric(float64(applyTime.Microseconds())/1000/n, "apply-ms")
				})
			}
		})
	}
}

// applyAll writes a working snapshot with new progress to every claimed task,
// each in its own goroutine as Service.runPolls does, polled at now and due
// again 1 ms later. A write that fails or finds no lease is reported with
// b.Error (callers may run on any goroutine, so they check b.Failed).
func applyAll(b *testing.B, s *taskstore.Store, tasks []taskstore.Task, owner string, now time.Time) {
	var wg sync.WaitGroup
	for _, t := range tasks {
		wg.Go(func() {
			snap := taskstore.State{Status: "working",
				Result: json.RawMessage(fmt.Sprintf(`{"progress":%d}`, t.PollAttemptCount%100))}
			ok, err := s.ApplyState(context.Background(), taskstore.Lease{ID: t.ID, Owner: owner, Token: t.LeaseToken}, snap, now.Add(time.Millisecond), now)
			switch {
			case err != nil:
				b.Error(err)
			case !ok:
				b.Errorf("ApplyState(%s) was fenced", t.ID)
			}
		})
	}
	wg.Wait()
}

// benchEngines are the two store engines; dsn makes a fresh, empty database.
var benchEngines = []struct {
	name   string
	driver string
	dsn    func(b *testing.B) (dsn, target string) // target: what driver opens
}{
	{"sqlite", "sqlite", func(b *testing.B) (string, string) {
		path := filepath.Join(b.TempDir(), "tasks.db")
		return "sqlite:" + path, path
	}},
	{"postgres", "pgx", func(b *testing.B) (string, string) {
		dsn := storetest.PostgresSchema(b, storetest.PostgresURL(b))
		return dsn, dsn
	}},
}

// analyze gathers planner statistics, as Postgres autovacuum would for a
// table of this size, so the benchmark sees the plan production gets.
func analyze(b *testing.B, driver, target string) {
	b.Helper()
	db, err := sql.Open(driver, target)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("ANALYZE"); err != nil {
		b.Fatalf("analyze: %v", err)
	}
}

func benchEpoch() time.Time { return time.UnixMilli(1_750_000_000_000).UTC() }

// seedForClaims stores due tasks due now and stored-due others: half
// completed, half polled again in a year.
func seedForClaims(b *testing.B, s *taskstore.Store, stored, due int) {
	b.Helper()
	ctx := context.Background()
	now := benchEpoch()
	for i := range stored {
		nt := taskstore.NewTask{
			ID: fmt.Sprintf("task-%06d", i), UserID: "user", ThreadID: fmt.Sprintf("thread-%d", i%50),
			ServerName: "reports", DriverName: "ordinary-tools", RemoteTaskID: fmt.Sprintf("remote-%d", i),
			TaskName: "report", State: taskstore.State{Status: "working"},
			NextPollAt: now.Add(-time.Second),
		}
		switch {
		case i >= due && i%2 == 0:
			nt.Status = "completed"
		case i >= due:
			nt.NextPollAt = now.AddDate(1, 0, 0)
		}
		if _, err := s.Create(ctx, nt, now.Add(-time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
}
