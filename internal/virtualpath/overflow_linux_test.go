//go:build linux

package virtualpath_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

// TestOneWorkspaceCannotOverflowAnothersQueue performs what one user's
// stdio process could do to every other user: write more files, between its
// own calls, than the kernel's queue of the shared inotify instance holds
// (max_queued_events). Nobody read the queue between calls, so it
// overflowed, and the overflow cost the call another user had running its
// changed-file report. The queue is now drained as events arrive.
func TestOneWorkspaceCannotOverflowAnothersQueue(t *testing.T) {
	queue := queueLength(t)
	a, b := newEnv(t), newEnv(t)
	for i := range 50 {
		if err := os.MkdirAll(filepath.Join(a.ws, "many", strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w := virtualpath.NewWatcher()
	defer w.Acquire(a.ws)() // A's stdio session holds its workspace
	defer w.Acquire(b.ws)() // so does B's

	cb := w.Begin(b.root, b.ws, b.ws) // B's call starts
	write(t, filepath.Join(b.ws, "b.txt"), "b")
	// Meanwhile A's process (between A's calls) writes many files.
	for i := range queue/3 + 100 {
		write(t, filepath.Join(a.ws, "many", strconv.Itoa(i%50), strconv.Itoa(i)), "x")
	}
	got := changedOf(t, cb.Rewrite(textResult("done")))
	cb.End()
	if !slices.Equal(got, virtual("b.txt")) {
		t.Fatalf("user B's call lists %q after user A's writes overflowed the shared queue, want [%s]", got, vws+"b.txt")
	}
}
