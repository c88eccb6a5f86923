//go:build !linux

package virtualpath

// inotify is empty where there is none: every call walks its workspace.
type inotify struct{}

func newInotify() inotify { return inotify{} }

// pending is empty: there are no events.
type pending struct{}

func (pending) take(uint64) []event { return nil }

type event struct{}

// buildLocked picks the walk: snapshots before and after each call.
func (w *Watcher) buildLocked(t *tree) {
	t.dirty = false
	w.setModeLocked(t, modeWalk)
}

func (w *Watcher) readLocked() bool               { return false }
func (w *Watcher) eventLocked(t *tree, ev *event) {}
func (w *Watcher) unwatchLocked(t *tree)          {}
func (w *Watcher) closeLocked()                   {}

// tooLarge is never asked: nothing is modeTooLarge here.
func (w *Watcher) tooLarge(string) bool { return false }
