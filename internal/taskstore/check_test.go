package taskstore_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/taskstore/storetest"
)

// TestCheck reads a store's state without changing it: a missing SQLite
// file stays missing, a migrated store is current, a store migrated by a
// newer build and a damaged file are errors an operator can act on.
func TestCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("missing sqlite file is not created", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "tasks.db")
		h, err := taskstore.Check(ctx, path)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if h.Engine != "sqlite" || h.Exists {
			t.Fatalf("Check = %+v, want sqlite, not existing", h)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Check created the database file (stat: %v)", err)
		}
	})

	t.Run("migrated sqlite is current", func(t *testing.T) {
		t.Parallel()
		path := filledStore(t)
		h, err := taskstore.Check(ctx, path)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if !h.Exists || h.Target == 0 || h.Version != h.Target {
			t.Fatalf("Check = %+v, want an existing store at the target version", h)
		}
	})

	t.Run("schema newer than this build", func(t *testing.T) {
		t.Parallel()
		path := filledStore(t)
		db := openRaw(t, "sqlite", path)
		if _, err := db.Exec(`INSERT INTO taskstore_goose_db_version (version_id, is_applied) VALUES (999999, 1)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		h, err := taskstore.Check(ctx, path)
		if !errors.Is(err, taskstore.ErrNewerSchema) || h.Version != 999999 {
			t.Fatalf("Check = %+v, %v; want ErrNewerSchema at 999999", h, err)
		}
	})

	t.Run("not a database", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "tasks.db")
		if err := os.WriteFile(path, []byte("this is not a SQLite database, but long enough to have a header page......"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := taskstore.Check(ctx, path); !errors.Is(err, taskstore.ErrDamaged) {
			t.Fatalf("Check of a text file: %v, want ErrDamaged", err)
		}
	})

	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn := storetest.PostgresSchema(t, storetest.PostgresURL(t))
		h, err := taskstore.Check(ctx, dsn)
		if err != nil {
			t.Fatalf("Check of an empty schema: %v", err)
		}
		if h.Engine != "postgres" || !h.Exists || h.Version != 0 || h.Target == 0 {
			t.Fatalf("Check of an empty schema = %+v, want postgres at version 0", h)
		}
		var tables int
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'tasks'`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Fatalf("Check migrated the schema")
		}
		openStore(t, dsn).Close()
		if h, err = taskstore.Check(ctx, dsn); err != nil || h.Version != h.Target {
			t.Fatalf("Check after Open = %+v, %v; want the target version", h, err)
		}
	})

	t.Run("postgres unreachable", func(t *testing.T) {
		t.Parallel()
		if _, err := taskstore.Check(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"); err == nil {
			t.Fatal("Check of a closed port succeeded")
		}
	})
}
