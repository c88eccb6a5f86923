package virtualpath

import (
	"encoding/json"
	"sync"
)

// Call is one stdio tool call seen from its thread's folders: it snapshots
// the workspace before the call and, after it, translates the result and
// lists the files the call changed.
//
// Calls in one workspace are tracked while they run. A call that overlapped
// another (either started while the other was between its two snapshots)
// cannot tell its writes from the other's, so it reports only the changed
// files its result names (by path or, for a file-like name, bare). Writes
// this host does not make (another process, another host on the same data
// folder) are not tracked.
type Call struct {
	root, workspace, cwd string
	before               map[string]Stamp
	ended                bool
	overlapped           bool // guarded by inflight.mu
}

// inflight holds the running calls of each workspace.
var inflight = struct {
	mu sync.Mutex
	m  map[string]map[*Call]bool
}{m: map[string]map[*Call]bool{}}

// Begin registers a call in workspace (inside the user-data folder root,
// with the server working in cwd) and snapshots the workspace. The caller
// must call End (Rewrite and Text do not).
func Begin(root, workspace, cwd string) *Call {
	c := &Call{root: root, workspace: workspace, cwd: cwd}
	inflight.mu.Lock()
	running := inflight.m[workspace]
	if running == nil {
		running = map[*Call]bool{}
		inflight.m[workspace] = running
	}
	for other := range running {
		other.overlapped, c.overlapped = true, true
	}
	running[c] = true
	inflight.mu.Unlock()
	// Registered first, so a call starting during the snapshot is seen.
	c.before = Snapshot(workspace)
	return c
}

// End unregisters the call; it is idempotent and safe on nil.
func (c *Call) End() {
	if c == nil {
		return
	}
	inflight.mu.Lock()
	defer inflight.mu.Unlock()
	c.end()
}

// end unregisters c; inflight.mu must be held.
func (c *Call) end() {
	if c.ended {
		return
	}
	c.ended = true
	running := inflight.m[c.workspace]
	delete(running, c)
	if len(running) == 0 {
		delete(inflight.m, c.workspace)
	}
}

// Rewrite finds the files the call changed (the second snapshot is taken
// while the call is still registered, then it ends), translates raw and
// lists them in _meta. On nil it returns raw.
func (c *Call) Rewrite(raw json.RawMessage) json.RawMessage {
	if c == nil {
		return raw
	}
	changed := Changed(c.workspace, c.before)
	inflight.mu.Lock()
	c.end()
	overlapped := c.overlapped
	inflight.mu.Unlock()
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
