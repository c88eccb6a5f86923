package taskstore_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/taskstore/storetest"
)

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *taskstore.Store { return openSQLite(t) })
}

func TestPostgres(t *testing.T) {
	base := storetest.PostgresURL(t)
	storetest.Run(t, func(t *testing.T) *taskstore.Store { return openStore(t, storetest.PostgresSchema(t, base)) })
}

// openSQLite opens a store on a new file in a temporary directory.
func openSQLite(tb testing.TB) *taskstore.Store {
	tb.Helper()
	return openStore(tb, "sqlite:"+filepath.Join(tb.TempDir(), "tasks.db"))
}

func openStore(tb testing.TB, dsn string) *taskstore.Store {
	tb.Helper()
	s, err := taskstore.Open(context.Background(), dsn)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestOpenRefusesDSN(t *testing.T) {
	tests := []struct {
		dsn  string
		want string
	}{
		{"", "empty database DSN"},
		{"sqlite:", "no file path"},
		{"mysql://db/tasks", `unsupported database scheme "mysql"`},
		{":memory:", "plain file path"},
		{"sqlite:file:tasks.db?mode=memory", "plain file path"},
		{"tasks.db?_pragma=foo", "must not contain '?'"},
	}
	for _, tt := range tests {
		t.Run(tt.dsn, func(t *testing.T) {
			s, err := taskstore.Open(context.Background(), tt.dsn)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", tt.dsn)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open(%q) = %v, want it to mention %q", tt.dsn, err, tt.want)
			}
		})
	}
}

// TestSQLiteReopen checks that a plain path works and that reopening an
// existing file keeps its tasks (the migrations are applied once).
func TestSQLiteReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := taskstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	nt := taskstore.NewTask{ID: "task-1", UserID: "u", ThreadID: "t", ServerName: "s", DriverName: "d",
		RemoteTaskID: "r", TaskName: "n", State: taskstore.State{Status: "completed"}}
	if _, err := s.Create(ctx, nt, time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openStore(t, "sqlite:"+path)
	if _, err := s.Get(ctx, "task-1", "u"); err != nil {
		t.Errorf("task lost on reopen: %v", err)
	}
}

// TestPostgresReplicasMigrateOnce opens several stores on one empty schema at
// once, as replicas starting together would: the advisory lock lets one
// migrate and the others find the schema ready.
func TestPostgresReplicasMigrateOnce(t *testing.T) {
	dsn := storetest.PostgresSchema(t, storetest.PostgresURL(t))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			s, err := taskstore.Open(context.Background(), dsn)
			if err != nil {
				t.Errorf("Open: %v", err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
}
