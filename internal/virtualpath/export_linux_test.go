package virtualpath

// Watches is the number of inotify watches held, and whether the instance
// is open.
func (w *Watcher) Watches() (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ino.wds), w.ino.fd >= 0
}

// ExhaustWatches acts as if adding a watch in workspace failed with
// ENOSPC (max_user_watches reached), which a test cannot cause without
// changing a limit every user of the machine shares.
func (w *Watcher) ExhaustWatches(workspace string) {
	w.mu.Lock()
	t := w.trees[workspace]
	w.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	w.degradeLocked(t, errNoWatches)
}

// OnWatch calls f with each folder made, moved in or moved away before it
// is handled, with only its workspace's lock held: a test blocks one
// workspace's handling in it.
func (w *Watcher) OnWatch(f func(dir string)) { w.watchHook = f }

// SetPendingBound lowers the bound of one workspace's unhandled events.
func (w *Watcher) SetPendingBound(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.maxPending = n
}
