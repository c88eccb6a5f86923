package taskstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/taskstore"
)

// TestOpenDamagedSQLite writes a real task database, damages the file the
// ways disks and careless copies do, and checks that Open refuses it with
// ErrDamaged and a message saying the database is damaged (naming the file,
// never a row). An intact file next to it still opens.
func TestOpenDamagedSQLite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"header overwritten", func(t *testing.T, path string) { overwrite(t, path, 0, []byte("this is not sqlite at all")) }},
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, 4096+100); err != nil {
				t.Fatal(err)
			}
		}},
		{"schema page garbled", func(t *testing.T, path string) { overwrite(t, path, 100, []byte(strings.Repeat("\xff", 400))) }},
		{"data pages garbled", func(t *testing.T, path string) {
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			for off := int64(2 * 4096); off+4096 <= info.Size(); off += 3 * 4096 {
				overwrite(t, path, off+8, []byte(strings.Repeat("\xa5", 200)))
			}
		}},
	}
	filled, err := os.ReadFile(filledStore(t))
	if err != nil {
		t.Fatal(err)
	}
	copyOf := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "tasks.db")
		if err := os.WriteFile(path, filled, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := copyOf(t)
			tt.damage(t, path)
			s, err := taskstore.Open(context.Background(), path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded on a damaged file")
			}
			if !errors.Is(err, taskstore.ErrDamaged) || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), path) {
				t.Errorf("Open = %v, want ErrDamaged naming the file", err)
			}
		})
	}
	t.Run("intact", func(t *testing.T) {
		t.Parallel()
		s, err := taskstore.Open(context.Background(), copyOf(t))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	})
}

// filledStore creates a closed SQLite task store with enough rows to span
// many pages and returns its path (closing checkpoints the WAL into it).
func filledStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := taskstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		nt := taskstore.NewTask{ID: fmt.Sprintf("task-%03d", i), UserID: "u", ThreadID: "t", ServerName: "s", DriverName: "d",
			RemoteTaskID: fmt.Sprintf("remote-%03d", i), TaskName: strings.Repeat("n", 200), State: taskstore.State{Status: "completed"}}
		if _, err := s.Create(ctx, nt, time.UnixMilli(int64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
