package taskstore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/taskstore/storetest"
)

func TestSQLiteInFlightNotification(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	s := openStore(t, "sqlite:"+path)
	storetest.InFlightNotification(t, s, openRaw(t, "sqlite", path+"?_busy_timeout=5000"))
}

func TestPostgresInFlightNotification(t *testing.T) {
	dsn := storetest.PostgresSchema(t, storetest.PostgresURL(t))
	s := openStore(t, dsn)
	storetest.InFlightNotification(t, s, openRaw(t, "pgx", dsn))
}

func openRaw(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestTrackingDegradedAfter checks the option: a lower threshold records the
// degraded event sooner, and a threshold below 1 is refused.
func TestTrackingDegradedAfter(t *testing.T) {
	ctx := context.Background()
	if _, err := taskstore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), taskstore.WithTrackingDegradedAfter(0)); err == nil {
		t.Error("Open with threshold 0: want an error")
	}
	s, err := taskstore.Open(ctx, filepath.Join(t.TempDir(), "tasks.db"), taskstore.WithTrackingDegradedAfter(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.TrackingDegradedAfter() != 1 {
		t.Fatalf("TrackingDegradedAfter = %d, want 1", s.TrackingDegradedAfter())
	}
	now := time.UnixMilli(1_750_000_000_000)
	nt := taskstore.NewTask{ID: "task-1", UserID: "u", ThreadID: "t", ServerName: "s", DriverName: "d",
		RemoteTaskID: "r", TaskName: "n", State: taskstore.State{Status: "working"}, NextPollAt: now}
	if _, err := s.Create(ctx, nt, now); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimDue(ctx, now, "owner", time.Minute, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("ClaimDue = %v, %v", claimed, err)
	}
	if ok, err := s.ReleaseClaim(ctx, taskstore.Lease{ID: "task-1", Owner: "owner", Token: claimed[0].LeaseToken}, now.Add(time.Second), "boom", now); err != nil || !ok {
		t.Fatalf("ReleaseClaim = %v, %v", ok, err)
	}
	got, err := s.Get(ctx, "task-1", "u")
	if err != nil {
		t.Fatal(err)
	}
	if got.EventVersion != 1 || got.NotificationStatus != "pending" {
		t.Errorf("after one error with threshold 1: event_version %d, notification %q; want 1, pending",
			got.EventVersion, got.NotificationStatus)
	}
}
