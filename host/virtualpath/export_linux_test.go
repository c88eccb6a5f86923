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
	defer w.mu.Unlock()
	w.degradeLocked(w.trees[workspace], errNoWatches)
}
