package virtualpath

import (
	"encoding/json"
	"math"
	"os"
	"sort"
	"sync"
)

// Watcher finds the files stdio calls change, per workspace, and tracks the
// calls running in each. On Linux one inotify instance serves every
// workspace: a workspace's folders are watched from its first Acquire (a
// stdio session starting) or call until its last release, so a call costs
// two non-blocking reads of the queue and an lstat per file it touched,
// whatever the size of the workspace. Where watches cannot be had (another
// system, the watch limit reached, a missing workspace) a call snapshots the
// workspace before and after instead (Scan, Changed). One Watcher should
// serve every endpoint that shares workspaces, so calls of two servers in
// one thread see each other. It is safe for concurrent use.
type Watcher struct {
	// mu guards trees, seq, the platform's queue and watch table (ino) and
	// each tree's refs, calling and pending events. It is held only for a
	// read of the queue or one watch added or removed, never for a
	// workspace's scan: every workspace's calls take it. A tree's own mu is
	// taken first. Methods named for a lock held hold the tree's, but for
	// readLocked, readAllLocked, giveLocked, unrefLocked and closeLocked,
	// which hold this.
	mu         sync.Mutex
	trees      map[string]*tree // by workspace
	seq        uint64           // advanced by each read of the queue that returned events
	maxFiles   int              // bound of a watched workspace's files and folders (maxFiles)
	maxEvents  int              // bound of one tree's events (maxFiles)
	maxPending int              // bound of one tree's unprocessed events (maxPending)
	ino        inotify          // the platform's part, guarded by mu
	// watchHook, set by tests only, is called before a folder made, moved
	// in or moved away is handled, with only its tree's lock held.
	watchHook func(dir string)
}

// NewWatcher returns a watcher holding nothing: its inotify instance is
// opened with the first watched workspace and closed with the last.
func NewWatcher() *Watcher {
	return &Watcher{trees: map[string]*tree{}, maxFiles: maxFiles, maxEvents: maxFiles, maxPending: maxPending, ino: newInotify()}
}

// maxPending bounds the events read for one workspace and not yet handled
// by its calls: the kernel's default queue (max_queued_events) for all of
// them. Past it the workspace's events are lost, as in an overflow of the
// queue, and no other workspace's.
const maxPending = 16384

// mode is how a workspace's changes are found.
type mode int

const (
	modeWatch    mode = iota // inotify events
	modeWalk                 // snapshots before and after each call
	modeTooLarge             // more than maxFiles files and folders: nothing is reported
)

// tree is one workspace's state: its watches, its running calls and the
// files written while they run.
type tree struct {
	// mu guards the fields below the Watcher's, and the handling of the
	// workspace's events: its calls take it, no other workspace's.
	mu sync.Mutex
	ws string
	// Guarded by Watcher.mu:
	refs    int     // sessions and calls holding it
	calling int     // calls from the queue read of their Begin to their End
	pending pending // events read from the queue, not yet handled
	// Guarded by mu:
	unbuilt bool   // its first holder is to watch it
	real    string // ws with symlinks resolved, when watched
	calls   map[*Call]bool
	mode    mode
	// dirty asks the next call to build the watches again: the queue
	// overflowed, the workspace folder was moved or deleted, or it did not
	// exist yet.
	dirty bool
	// events holds the files with events handled while calls run, with the
	// queue read that saw them; a call's changed files are those read
	// after its Begin. Emptied when no call runs, bounded by maxEvents.
	events map[string]uint64
	// wds are the folders it watched; one a folder moved to another
	// workspace took stays until its move is handled (the Watcher's
	// table says whose a watch is).
	wds map[int32]string
}

// Call is one stdio tool call seen from its thread's folders: after it, it
// translates the result and lists the files the call changed.
//
// Calls in one workspace are tracked while they run. A call that overlapped
// another (either started while the other ran) cannot tell its writes from
// the other's, so it reports only the changed files its result names (by
// path or, for a file-like name, bare). Writes this host does not make
// (another process, another host on the same data folder) are not told
// apart from the call's.
type Call struct {
	w                    *Watcher
	t                    *tree
	root, workspace, cwd string
	mode                 mode
	seq                  uint64           // the queue read before the call
	before               map[string]Stamp // modeWalk: the snapshot before
	// Guarded by t.mu:
	ended      bool
	overlapped bool
	lost       bool // events were lost while it ran: it reports nothing
}

// Acquire keeps workspace's watches from now until release is called (it
// is idempotent): a stdio session holds them for its life, so its calls
// find them built. Calls hold them too, so Acquire is an optimisation only.
func (w *Watcher) Acquire(workspace string) (release func()) {
	t := w.acquire(workspace)
	t.mu.Lock()
	w.buildFirstLocked(t)
	t.mu.Unlock()
	return sync.OnceFunc(func() {
		t.mu.Lock()
		w.releaseLocked(t)
		t.mu.Unlock()
	})
}

// acquire returns the tree of ws with one more reference, a new one (to
// be built by buildFirstLocked) if ws is not held.
func (w *Watcher) acquire(ws string) *tree {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.trees[ws]
	if t == nil {
		t = &tree{ws: ws, unbuilt: true, calls: map[*Call]bool{}, wds: map[int32]string{}}
		w.trees[ws] = t
	}
	t.refs++
	return t
}

// buildFirstLocked builds t if nobody has, reporting whether it did.
func (w *Watcher) buildFirstLocked(t *tree) bool {
	if !t.unbuilt {
		return false
	}
	t.unbuilt = false
	w.buildLocked(t)
	return true
}

// releaseLocked drops a reference to t; the last removes its watches (the
// instance's last closes it).
func (w *Watcher) releaseLocked(t *tree) {
	w.mu.Lock()
	last := w.unrefLocked(t)
	w.mu.Unlock()
	if last {
		w.unwatchLocked(t)
	}
}

// unrefLocked, with the Watcher's lock held, drops a reference to t and
// reports whether it was the last (then t is no longer held, and its
// watches are to be removed).
func (w *Watcher) unrefLocked(t *tree) bool {
	if t.refs--; t.refs > 0 {
		return false
	}
	delete(w.trees, t.ws)
	if len(w.trees) == 0 {
		w.closeLocked()
	}
	return true
}

// drain reads the queue until it is empty, giving each event to its tree:
// every event queued before drain was called has been given when it
// returns.
func (w *Watcher) drain() {
	w.mu.Lock()
	w.readAllLocked()
	w.mu.Unlock()
}

// readAllLocked, with the Watcher's lock held, reads the queue until it
// is empty, letting the lock go between two reads (another workspace's
// call may read then: an event read is given in the hold that read it).
func (w *Watcher) readAllLocked() {
	for w.readLocked() {
		w.mu.Unlock()
		w.mu.Lock()
	}
}

// catchUpLocked drains the queue, then handles t's events, in order and
// holding only t's lock: with begin set (a call starting), those read
// until the queue was empty, and t runs a call from that read on (its
// files' events are kept for it); else all. It returns that read.
func (w *Watcher) catchUpLocked(t *tree, begin bool) uint64 {
	w.mu.Lock()
	w.readAllLocked()
	seq, upTo := w.seq, uint64(math.MaxUint64)
	if begin {
		t.calling++
		upTo = seq
	}
	evs := t.pending.take(upTo)
	w.mu.Unlock()
	for i := range evs {
		w.eventLocked(t, &evs[i])
	}
	return seq
}

// setModeLocked changes how t is tracked; leaving modeWatch loses the
// events of the calls that rely on them.
func (w *Watcher) setModeLocked(t *tree, m mode) {
	if t.mode == modeWatch && m != modeWatch {
		w.loseLocked(t)
	}
	t.mode = m
}

// loseLocked marks t's running calls as having lost events.
func (w *Watcher) loseLocked(t *tree) {
	for c := range t.calls {
		c.lost = true
	}
	t.events = nil
}

// recordLocked notes an event on file p at queue read seq, when a call
// runs to want it. Past maxEvents files the running calls lose theirs: an
// agent writing a million files in one call cannot grow it unbounded.
func (w *Watcher) recordLocked(t *tree, p string, seq uint64) {
	if len(t.calls) == 0 {
		return
	}
	if t.events == nil {
		t.events = map[string]uint64{}
	}
	if _, ok := t.events[p]; !ok && len(t.events) >= w.maxEvents {
		w.loseLocked(t)
		return
	}
	t.events[p] = max(t.events[p], seq)
}

// Begin registers a call in workspace (inside the user-data folder root,
// with the server working in cwd) and marks where its changes start. The
// caller must call End (Rewrite and Text do not).
func (w *Watcher) Begin(root, workspace, cwd string) *Call {
	t := w.acquire(workspace)
	t.mu.Lock()
	built := w.buildFirstLocked(t)
	stillLarge := false
	if !built && !t.dirty && t.mode == modeTooLarge {
		// Counted without the lock, which every call in the workspace takes.
		t.mu.Unlock()
		stillLarge = w.tooLarge(workspace)
		t.mu.Lock()
	}
	// What is queued now happened before the call; what is read later,
	// after it (handled once the call is registered).
	seq := w.catchUpLocked(t, true)
	if !built && (t.dirty || (t.mode == modeTooLarge && !stillLarge)) {
		w.loseLocked(t) // events in the gap between the watches would be missed
		w.unwatchLocked(t)
		w.buildLocked(t)
	}
	c := &Call{w: w, t: t, root: root, workspace: workspace, cwd: cwd, mode: t.mode, seq: seq}
	for other := range t.calls {
		other.overlapped, c.overlapped = true, true
	}
	t.calls[c] = true
	t.mu.Unlock()
	if c.mode == modeWalk {
		// Registered first, so a call starting during the snapshot is seen.
		c.before = Scan(workspace)
	}
	return c
}

// End unregisters the call; it is idempotent and safe on nil.
func (c *Call) End() {
	if c == nil {
		return
	}
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	c.endLocked()
}

// endLocked unregisters c, forgets the events no running call needs, and
// releases the tree.
func (c *Call) endLocked() {
	if c.ended {
		return
	}
	c.ended = true
	t, w := c.t, c.w
	delete(t.calls, c)
	w.mu.Lock()
	t.calling--
	oldest := w.seq
	last := w.unrefLocked(t)
	w.mu.Unlock()
	if len(t.calls) == 0 {
		t.events = nil
	} else if len(t.events) > 0 {
		for o := range t.calls {
			oldest = min(oldest, o.seq)
		}
		for p, s := range t.events {
			if s <= oldest {
				delete(t.events, p)
			}
		}
	}
	if last {
		w.unwatchLocked(t)
	}
}

// changed lists the files the call created or modified, sorted, and ends
// it; it also reports whether it overlapped another call.
func (c *Call) changed() ([]string, bool) {
	var out []string
	if c.mode == modeWalk {
		// Taken while the call is still registered.
		out = Changed(c.workspace, c.before)
	}
	w, t := c.w, c.t
	t.mu.Lock()
	var candidates []string
	if c.mode == modeWatch && !c.ended {
		// The server's writes returned before its answer was sent, so
		// their events are queued by now: read (by this call or another)
		// when the queue is found empty, and handled here.
		w.catchUpLocked(t, false)
		if !c.lost {
			for p, s := range c.t.events {
				if s > c.seq {
					candidates = append(candidates, p)
				}
			}
		}
	}
	c.endLocked()
	overlapped := c.overlapped
	t.mu.Unlock()
	for _, p := range candidates {
		// Deleted since, replaced by a folder or a symlink: not reported.
		if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	if c.mode == modeWatch {
		sort.Strings(out)
	}
	return out, overlapped
}

// Rewrite finds the files the call changed (before it ends), translates
// raw and lists them in _meta. On nil it returns raw.
func (c *Call) Rewrite(raw json.RawMessage) json.RawMessage {
	if c == nil {
		return raw
	}
	changed, overlapped := c.changed()
	t := NewTranslator(c.root, c.cwd, changed)
	t.onlyNamed = overlapped
	return RewriteResult(raw, t, changed)
}

// Text translates the paths in an error text that reaches the model (a
// JSON-RPC error message). On nil it returns s.
func (c *Call) Text(s string) string {
	if c == nil {
		return s
	}
	return NewTranslator(c.root, c.cwd, nil).Paths(s)
}
