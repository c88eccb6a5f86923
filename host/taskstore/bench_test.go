package taskstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/taskstore"
	"github.com/antler-mcp/antler/host/taskstore/storetest"
)

// BenchmarkClaimDue measures one claim pass (ns/op) over the same 100 due
// tasks among 1,000 and 10,000 stored ones. The rest are terminal or due in a
// year; with the (status, next_poll_at) index a pass reads the due rows only,
// so its cost must not grow with the stored count.
func BenchmarkClaimDue(b *testing.B) {
	engines := []struct {
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
	for _, engine := range engines {
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
			TaskName: "report", Snapshot: taskstore.Snapshot{Status: "working"},
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
