package virtualpath

// NewWatcherBounds is NewWatcher with smaller bounds: files and folders of
// a watched workspace, and files with events while calls run.
func NewWatcherBounds(files, events int) *Watcher {
	w := NewWatcher()
	w.maxFiles, w.maxEvents = files, events
	return w
}

// Workspaces is the number of workspaces held.
func (w *Watcher) Workspaces() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.trees)
}

// Mode names how workspace's changes are found now ("" if not held).
func (w *Watcher) Mode(workspace string) string {
	w.mu.Lock()
	t := w.trees[workspace]
	w.mu.Unlock()
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return [...]string{modeWatch: "watch", modeWalk: "walk", modeTooLarge: "too large"}[t.mode]
}
