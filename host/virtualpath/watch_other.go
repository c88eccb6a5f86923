//go:build !linux

package virtualpath

// inotify is empty where there is none: every call walks its workspace.
type inotify struct{}

func newInotify() inotify { return inotify{} }

// buildLocked picks the walk: snapshots before and after each call.
func (w *Watcher) buildLocked(t *tree) {
	t.dirty = false
	w.setModeLocked(t, modeWalk)
}

func (w *Watcher) drainLocked()          {}
func (w *Watcher) unwatchLocked(t *tree) {}
func (w *Watcher) closeLocked()          {}

// tooLarge is never asked: nothing is modeTooLarge here.
func (w *Watcher) tooLarge(string) bool { return false }
