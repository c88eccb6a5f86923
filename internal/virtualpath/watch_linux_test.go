package virtualpath_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

// A call whose events overflow the kernel's queue reports nothing (it
// cannot know what it wrote), and the next call is tracked again with the
// folders made meanwhile watched.
func TestWatchQueueOverflow(t *testing.T) {
	queue := queueLength(t)
	e := newEnv(t)
	w := virtualpath.NewWatcher()
	defer w.Acquire(e.ws)()
	for i := range 50 {
		if err := os.MkdirAll(filepath.Join(e.ws, "many", strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Each file is three events (create, modify, close after writing), in
	// folders watched before the call.
	got := call(t, w, e, func() {
		for i := range queue/3 + 100 {
			write(t, filepath.Join(e.ws, "many", strconv.Itoa(i%50), strconv.Itoa(i)), "x")
		}
		write(t, filepath.Join(e.ws, "many", "new", "f"), "x")
	})
	if got != nil {
		t.Fatalf("an overflowing call lists %d files", len(got))
	}
	got = call(t, w, e, func() {
		write(t, filepath.Join(e.ws, "many", "7", "after.txt"), "x")
		write(t, filepath.Join(e.ws, "many", "new", "after.txt"), "x")
	})
	if !slices.Equal(got, virtual("many/7/after.txt", "many/new/after.txt")) {
		t.Fatalf("after the overflow: %q", got)
	}
	if w.Mode(e.ws) != "watch" {
		t.Fatalf("mode %q after the overflow", w.Mode(e.ws))
	}
}

// The bounds: a workspace with more files and folders than the bound
// reports nothing until it is small enough again; a call writing more
// files than the event bound reports nothing; one making more folders
// than the bound reports nothing.
func TestWatchBounds(t *testing.T) {
	e := newEnv(t)
	for i := range 10 { // 10 files and the workspace itself
		write(t, filepath.Join(e.ws, fmt.Sprintf("f%d", i)), "x")
	}
	w := virtualpath.NewWatcherBounds(10, 5)
	defer w.Acquire(e.ws)()
	if got := call(t, w, e, func() { write(t, filepath.Join(e.ws, "f0"), "y") }); got != nil || w.Mode(e.ws) != "too large" {
		t.Fatalf("too large: %q, mode %q", got, w.Mode(e.ws))
	}
	for i := range 6 {
		if err := os.Remove(filepath.Join(e.ws, fmt.Sprintf("f%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := call(t, w, e, func() { write(t, filepath.Join(e.ws, "f9"), "y") }); !slices.Equal(got, virtual("f9")) {
		t.Fatalf("small again: %q (mode %q)", got, w.Mode(e.ws))
	}
	// Six files with events, past the bound of five.
	got := call(t, w, e, func() {
		for i := range 6 {
			write(t, filepath.Join(e.ws, fmt.Sprintf("g%d", i)), "x")
		}
	})
	if got != nil {
		t.Fatalf("past the event bound: %q", got)
	}
	if got := call(t, w, e, func() { write(t, filepath.Join(e.ws, "f9"), "z") }); !slices.Equal(got, virtual("f9")) {
		t.Fatalf("after the event bound: %q", got)
	}
	// Eleven folders: more watches than the bound.
	got = call(t, w, e, func() {
		if err := os.MkdirAll(filepath.Join(e.ws, "1/2/3/4/5/6/7/8/9/10/11"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(e.ws, "1", "x"), "x")
	})
	if got != nil || w.Mode(e.ws) != "too large" {
		t.Fatalf("too many folders: %q, mode %q", got, w.Mode(e.ws))
	}
	if n, _ := w.Watches(); n != 0 {
		t.Fatalf("%d watches kept for an untracked workspace", n)
	}
}

// With no watch to be had (max_user_watches reached) the running call
// reports nothing and later calls walk the workspace, with the walk's
// result.
func TestWatchExhaustedFallsBackToWalk(t *testing.T) {
	e := newEnv(t)
	w := virtualpath.NewWatcher()
	defer w.Acquire(e.ws)()
	c := w.Begin(e.root, e.ws, e.ws)
	write(t, filepath.Join(e.ws, "a.txt"), "x")
	w.ExhaustWatches(e.ws)
	if got := changedOf(t, c.Rewrite(textResult("done"))); got != nil {
		t.Fatalf("the call that lost its watches lists %q", got)
	}
	c.End()
	if w.Mode(e.ws) != "walk" {
		t.Fatalf("mode %q", w.Mode(e.ws))
	}
	got := call(t, w, e, func() {
		write(t, filepath.Join(e.ws, "d", "b.txt"), "x")
		write(t, filepath.Join(e.ws, "a.txt"), "longer")
	})
	if !slices.Equal(got, virtual("a.txt", "d/b.txt")) {
		t.Fatalf("walked: %q", got)
	}
}

// A folder moved from one workspace to another is the second's: its files
// are listed there, and later writes in it are the second's only.
func TestWatchFolderMovedBetweenWorkspaces(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	write(t, filepath.Join(a.ws, "d", "e", "x.txt"), "x")
	w := virtualpath.NewWatcher()
	defer w.Acquire(a.ws)()
	defer w.Acquire(b.ws)()
	ca := w.Begin(a.root, a.ws, a.ws)
	cb := w.Begin(b.root, b.ws, b.ws)
	rename(t, filepath.Join(a.ws, "d"), filepath.Join(b.ws, "d"))
	gotA, gotB := changedOf(t, ca.Rewrite(textResult("done"))), changedOf(t, cb.Rewrite(textResult("done")))
	ca.End()
	cb.End()
	if gotA != nil || !slices.Equal(gotB, virtual("d/e/x.txt")) {
		t.Fatalf("A lists %q, B lists %q", gotA, gotB)
	}
	ca = w.Begin(a.root, a.ws, a.ws)
	cb = w.Begin(b.root, b.ws, b.ws)
	write(t, filepath.Join(b.ws, "d", "e", "y.txt"), "y")
	gotA, gotB = changedOf(t, ca.Rewrite(textResult("done"))), changedOf(t, cb.Rewrite(textResult("done")))
	ca.End()
	cb.End()
	if gotA != nil || !slices.Equal(gotB, virtual("d/e/y.txt")) {
		t.Fatalf("later: A lists %q, B lists %q", gotA, gotB)
	}
}

// A workspace's watches last while a session or a call holds it; the last
// release removes them, and the instance closes with the last workspace.
func TestWatchRelease(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	write(t, filepath.Join(a.ws, "d1", "d2", "f"), "x")
	w := virtualpath.NewWatcher()
	releaseA := w.Acquire(a.ws)
	releaseB := w.Acquire(b.ws)
	if n, open := w.Watches(); n != 4 || !open {
		t.Fatalf("%d watches (open %v), want 4: two workspaces, d1, d2", n, open)
	}
	c := w.Begin(a.root, a.ws, a.ws)
	write(t, filepath.Join(a.ws, "new", "f"), "x")
	releaseA()
	releaseA() // idempotent
	if w.Workspaces() != 2 {
		t.Fatal("a running call's workspace was released with its session")
	}
	got := changedOf(t, c.Rewrite(textResult("done")))
	c.End()
	if !slices.Equal(got, virtual("new/f")) {
		t.Fatalf("changed = %q", got)
	}
	if n, _ := w.Watches(); n != 1 || w.Workspaces() != 1 {
		t.Fatalf("after A: %d watches, %d workspaces; want only B's", n, w.Workspaces())
	}
	// A call without a session holds the workspace for itself.
	if got := call(t, w, a, func() { write(t, filepath.Join(a.ws, "g"), "x") }); !slices.Equal(got, virtual("g")) {
		t.Fatalf("sessionless call: %q", got)
	}
	releaseB()
	if n, open := w.Watches(); n != 0 || open || w.Workspaces() != 0 {
		t.Fatalf("after all: %d watches, open %v, %d workspaces", n, open, w.Workspaces())
	}
}

// An agent cannot take another workspace's watches: a folder made under a
// folder it then renames away and replaces with a symlink to another
// thread's user data is read, when the events arrive, through the symlink.
// Watching it must not take (and, with the rename, remove) the other
// workspace's watches, or that workspace's calls stop listing their files.
func TestWatchSymlinkCannotStealAnotherWorkspace(t *testing.T) {
	attacker, victim := newEnv(t), newEnv(t)
	if err := os.MkdirAll(filepath.Join(attacker.ws, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(victim.ws, "v", "old.txt"), "x")
	w := virtualpath.NewWatcher()
	defer w.Acquire(attacker.ws)()
	defer w.Acquire(victim.ws)()
	// Between two reads of the queue: x/workspace made while x is a
	// folder, x moved away, x a symlink to the victim's user data, so
	// x/workspace is the victim's workspace when the event is read.
	if err := os.Mkdir(filepath.Join(attacker.ws, "x", "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	rename(t, filepath.Join(attacker.ws, "x"), filepath.Join(attacker.ws, "x2"))
	symlink(t, victim.root, filepath.Join(attacker.ws, "x"))
	if got := call(t, w, attacker, func() {}); got != nil {
		t.Fatalf("the attacker's call lists %q", got)
	}
	got := call(t, w, victim, func() {
		write(t, filepath.Join(victim.ws, "top.txt"), "y")
		write(t, filepath.Join(victim.ws, "v", "new.txt"), "y")
	})
	if !slices.Equal(got, virtual("top.txt", "v/new.txt")) {
		t.Fatalf("the victim's call lists %q, want top.txt and v/new.txt", got)
	}
}

// An agent moving a large folder tree out of its workspace and back in,
// again and again, delays no other workspace's calls: handling the moves
// (thousands of watches removed, then added and the folders read) holds
// only its own workspace. With that handling stopped in the middle, each
// time, a call in another workspace begins, lists its file and ends; under
// one lock for every workspace it would wait for ever.
func TestWatchLargeMovesDoNotBlockOtherWorkspaces(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	tree, away := filepath.Join(a.ws, "tree"), filepath.Join(a.outside, "tree")
	for i := range 3000 { // 3,031 folders
		if err := os.MkdirAll(filepath.Join(tree, strconv.Itoa(i/100), strconv.Itoa(i%100)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(tree, "0", "0", "f.txt"), "x")
	w := virtualpath.NewWatcher()
	handling, resume, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(stop) // a failed test leaves A's handling stopped no more
	w.OnWatch(func(dir string) {
		if dir != tree {
			return
		}
		select {
		case handling <- struct{}{}:
			select {
			case <-resume:
			case <-stop:
			}
		case <-stop:
		}
	})
	defer w.Acquire(a.ws)()
	defer w.Acquire(b.ws)()
	const cycles = 3
	type result struct {
		raw json.RawMessage
		err error
	}
	results := make(chan result, cycles)
	go func() {
		for range cycles {
			c := w.Begin(a.root, a.ws, a.ws)
			err := os.Rename(tree, away)
			if err == nil {
				err = os.Rename(away, tree)
			}
			raw := c.Rewrite(textResult("done"))
			c.End()
			if results <- (result{raw, err}); err != nil {
				return
			}
		}
	}()
	n := 0
	for range cycles {
		for _, step := range []string{"moved away", "moved in"} {
			<-handling
			name := fmt.Sprintf("b%d.txt", n)
			n++
			got := call(t, w, b, func() { write(t, filepath.Join(b.ws, name), "b") })
			if !slices.Equal(got, virtual(name)) {
				t.Fatalf("B's call while A's tree is %s lists %q", step, got)
			}
			resume <- struct{}{}
		}
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := changedOf(t, r.raw); !slices.Equal(got, virtual("tree/0/0/f.txt")) {
			t.Fatalf("A's call lists %q", got)
		}
	}
	if n, _ := w.Watches(); n != 3031+2 {
		t.Fatalf("%d watches, want the tree's, A's and B's", n)
	}
}

// Past the bound of events read and not yet handled, a workspace's events
// are lost as in an overflow of the queue, and no other workspace's: the
// flooding workspace's call reports nothing, another's lists its file, and
// the next call in the first is tracked again.
func TestWatchPendingBoundIsPerWorkspace(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	w := virtualpath.NewWatcher()
	w.SetPendingBound(10)
	defer w.Acquire(a.ws)()
	defer w.Acquire(b.ws)()
	ca := w.Begin(a.root, a.ws, a.ws)
	cb := w.Begin(b.root, b.ws, b.ws)
	for i := range 20 { // three events each
		write(t, filepath.Join(a.ws, fmt.Sprintf("a%d", i)), "a")
	}
	write(t, filepath.Join(b.ws, "b.txt"), "b")
	gotB := changedOf(t, cb.Rewrite(textResult("done"))) // reads A's events too
	gotA := changedOf(t, ca.Rewrite(textResult("done")))
	ca.End()
	cb.End()
	if gotA != nil || !slices.Equal(gotB, virtual("b.txt")) {
		t.Fatalf("A lists %q, B lists %q", gotA, gotB)
	}
	if got := call(t, w, a, func() { write(t, filepath.Join(a.ws, "d", "after.txt"), "a") }); !slices.Equal(got, virtual("d/after.txt")) {
		t.Fatalf("after the flood A lists %q (mode %q)", got, w.Mode(a.ws))
	}
}

// A workspace removing more watches than the kernel's queue holds (a tree
// larger than max_queued_events moved away) does not overflow it with their
// IN_IGNORED events: another workspace's call running meanwhile still lists
// its file.
func TestWatchLargeTreeMovedAwayKeepsTheQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("makes more folders than the queue holds events")
	}
	queue := queueLength(t)
	a, b := newEnv(t), newEnv(t)
	tree, away := filepath.Join(a.ws, "tree"), filepath.Join(a.outside, "tree")
	for i := range queue + 1000 {
		if err := os.MkdirAll(filepath.Join(tree, strconv.Itoa(i/100), strconv.Itoa(i%100)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w := virtualpath.NewWatcher()
	defer w.Acquire(a.ws)()
	defer w.Acquire(b.ws)()
	cb := w.Begin(b.root, b.ws, b.ws)
	write(t, filepath.Join(b.ws, "b.txt"), "b")
	call(t, w, a, func() { rename(t, tree, away) }) // its watches removed
	call(t, w, a, func() { rename(t, away, tree) })
	got := changedOf(t, cb.Rewrite(textResult("done")))
	cb.End()
	if !slices.Equal(got, virtual("b.txt")) {
		t.Fatalf("B lists %q", got)
	}
}

// queueLength is the kernel's bound of an inotify queue; a test that fills
// it is skipped where it cannot be read or is too long to fill quickly.
func queueLength(t *testing.T) int {
	t.Helper()
	raw, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skip(err)
	}
	queue, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || queue > 100_000 {
		t.Skipf("max_queued_events %q", raw)
	}
	return queue
}
