package virtualpath

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"
)

// inotify is the Watcher's instance: one for every workspace, since a user
// may open only max_user_instances (128 by default) while watches are
// plentiful (max_user_watches).
type inotify struct {
	fd  int             // -1 while no workspace is watched
	buf []byte          // one read of the queue
	wds map[int32]*tree // every watch, by descriptor
}

func newInotify() inotify { return inotify{fd: -1, wds: map[int32]*tree{}} }

// watchMask is what a folder's watch asks for: a file's creation, writes,
// closes after writing, metadata (an mtime set by utimensat), moves in and
// out, and the folder's own end. Symlinks are not followed, and a file
// unlinked while open stops reporting.
const watchMask = syscall.IN_CREATE | syscall.IN_CLOSE_WRITE | syscall.IN_MODIFY | syscall.IN_MOVED_TO |
	syscall.IN_ATTRIB | syscall.IN_MOVED_FROM | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF |
	syscall.IN_DONT_FOLLOW | syscall.IN_ONLYDIR | syscall.IN_EXCL_UNLINK

// fileEvents are the events that make a file changed.
const fileEvents = syscall.IN_CREATE | syscall.IN_CLOSE_WRITE | syscall.IN_MODIFY | syscall.IN_MOVED_TO | syscall.IN_ATTRIB

var (
	errNoWatches = errors.New("inotify watches exhausted")
	errTooLarge  = errors.New("workspace too large to track")
)

// buildLocked watches t's folders (t has none), or picks the walk or
// nothing when that cannot be done.
func (w *Watcher) buildLocked(t *tree) {
	t.dirty = false
	info, err := os.Lstat(t.ws)
	if err != nil || !info.IsDir() {
		// Nothing to watch yet: calls walk (a missing folder costs one
		// lstat) until it exists.
		w.setModeLocked(t, modeWalk)
		t.dirty = true
		return
	}
	if w.tooLarge(t.ws) {
		// Counted before watching, so a workspace that stays too large
		// costs each call a bounded walk, not watches added and removed.
		w.setModeLocked(t, modeTooLarge)
		return
	}
	if t.real, err = filepath.EvalSymlinks(t.ws); err != nil {
		w.setModeLocked(t, modeWalk)
		t.dirty = true
		return
	}
	if w.ino.fd < 0 {
		fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
		if err != nil {
			w.setModeLocked(t, modeWalk) // the instance limit: walk
			return
		}
		w.ino.fd = fd
	}
	if err := w.watchLocked(t, t.ws, false); err != nil {
		w.degradeLocked(t, err)
		return
	}
	w.setModeLocked(t, modeWatch)
}

// degradeLocked stops watching t after err: too many folders means
// nothing is reported (until a call finds it small enough again), no more
// watches means calls walk for as long as t is held.
func (w *Watcher) degradeLocked(t *tree, err error) {
	w.unwatchLocked(t)
	if errors.Is(err, errTooLarge) {
		w.setModeLocked(t, modeTooLarge)
	} else {
		w.setModeLocked(t, modeWalk)
	}
}

// tooLarge reports whether dir holds more than maxFiles files and folders
// (excluded folders skipped), reading folders without a stat of any file.
func (w *Watcher) tooLarge(dir string) bool {
	n, bound := 0, w.maxFiles
	var walk func(string) bool
	walk = func(dir string) bool {
		if n++; n > bound {
			return false
		}
		f, err := os.Open(dir)
		if err != nil {
			return true
		}
		entries, _ := f.ReadDir(-1)
		f.Close()
		for _, d := range entries {
			switch {
			case d.IsDir():
				if !excluded[d.Name()] && !walk(filepath.Join(dir, d.Name())) {
					return false
				}
			case d.Type().IsRegular():
				if n++; n > bound {
					return false
				}
			}
		}
		return true
	}
	return !walk(dir)
}

// watchLocked watches dir and the folders under it (excluded ones
// skipped), then reads it: a file made before the watch is found by the
// read, one made after by an event. With report set the files found are
// recorded as changed (a folder made or moved in during a call).
//
// dir is opened first and the watch put on the folder opened, which must
// lie where dir says inside t's workspace: the path of a folder made
// during a call is read later, when a symlink may stand on its way (an
// agent renames a parent away and puts a symlink in its place), and
// watching through it would take another workspace's watches.
func (w *Watcher) watchLocked(t *tree, dir string, report bool) error {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil // unreadable, gone, or now a symlink: skipped, as a walk skips it
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	wd, err := syscall.InotifyAddWatch(w.ino.fd, self, watchMask&^syscall.IN_DONT_FOLLOW)
	switch {
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.ENOMEM):
		return errNoWatches
	case errors.Is(err, syscall.ENOENT):
		return errNoWatches // no /proc: the folder opened cannot be watched
	case err != nil:
		return nil
	}
	if !w.insideLocked(t, dir, self) {
		// Reached through a symlink, or moved since it was opened:
		// skipped, and another workspace's watch left as it was.
		if w.ino.wds[int32(wd)] == nil {
			_, _ = syscall.InotifyRmWatch(w.ino.fd, uint32(wd))
		}
		return nil
	}
	w.mapLocked(t, int32(wd), dir)
	if len(t.wds) > w.maxFiles {
		return errTooLarge
	}
	entries, _ := f.ReadDir(-1)
	for _, d := range entries {
		p := filepath.Join(dir, d.Name())
		switch {
		case d.IsDir():
			if excluded[d.Name()] {
				continue
			}
			if err := w.watchLocked(t, p, report); err != nil {
				return err
			}
		case report && d.Type().IsRegular():
			w.recordLocked(t, p)
		}
	}
	return nil
}

// insideLocked reports whether the folder open as self (a /proc/self/fd
// link) is dir, inside t's workspace with no symlink followed: the link
// reads as the folder's real path, wherever the path used to open it led.
func (w *Watcher) insideLocked(t *tree, dir, self string) bool {
	real, err := os.Readlink(self)
	if err != nil {
		return false
	}
	if t.real == "" || !isWithin(dir, t.ws) {
		return false
	}
	rel, _ := filepath.Rel(t.ws, dir)
	return real == filepath.Join(t.real, rel)
}

// mapLocked records that wd watches dir for t. The kernel gives a folder
// watched again the same descriptor: a folder moved within t gets its new
// path, one moved in from another workspace changes owner.
func (w *Watcher) mapLocked(t *tree, wd int32, dir string) {
	if old := w.ino.wds[wd]; old != nil && old != t {
		delete(old.wds, wd)
	}
	w.ino.wds[wd] = t
	t.wds[wd] = dir
}

// unwatchLocked removes every watch of t.
func (w *Watcher) unwatchLocked(t *tree) {
	for wd := range t.wds {
		w.forgetLocked(t, wd)
	}
}

// unwatchUnderLocked removes t's watches of dir and the folders under it
// (a folder moved away).
func (w *Watcher) unwatchUnderLocked(t *tree, dir string) {
	for wd, p := range t.wds {
		if isWithin(p, dir) {
			w.forgetLocked(t, wd)
		}
	}
}

// forgetLocked removes one watch; its IN_IGNORED, read later, finds it
// gone.
func (w *Watcher) forgetLocked(t *tree, wd int32) {
	_, _ = syscall.InotifyRmWatch(w.ino.fd, uint32(wd))
	delete(t.wds, wd)
	if w.ino.wds[wd] == t {
		delete(w.ino.wds, wd)
	}
}

// closeLocked closes the instance once no workspace is watched.
func (w *Watcher) closeLocked() {
	if w.ino.fd >= 0 {
		syscall.Close(w.ino.fd)
		w.ino.fd = -1
	}
	clear(w.ino.wds)
	w.ino.buf = nil
}

// drainLocked reads the queue until it is empty, without blocking.
func (w *Watcher) drainLocked() {
	if w.ino.fd < 0 {
		return
	}
	if w.ino.buf == nil {
		w.ino.buf = make([]byte, 64<<10)
	}
	for {
		n, err := syscall.Read(w.ino.fd, w.ino.buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return // EAGAIN: empty
		}
		w.seq++
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&w.ino.buf[off]))
			nameAt := off + syscall.SizeofInotifyEvent
			off = nameAt + int(ev.Len)
			if off > n {
				break
			}
			name := w.ino.buf[nameAt:off]
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			w.eventLocked(ev.Wd, ev.Mask, string(name))
		}
	}
}

// eventLocked applies one event.
func (w *Watcher) eventLocked(wd int32, mask uint32, name string) {
	if mask&syscall.IN_Q_OVERFLOW != 0 {
		// Events were dropped, of any workspace: the running calls cannot
		// know their files, and new folders may have no watch.
		for _, t := range w.trees {
			w.loseLocked(t)
			t.dirty = true
		}
		return
	}
	t := w.ino.wds[wd]
	if t == nil {
		return // removed, or another workspace's since
	}
	dir := t.wds[wd]
	switch {
	case mask&syscall.IN_IGNORED != 0:
		delete(t.wds, wd)
		delete(w.ino.wds, wd)
		return
	case mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_UNMOUNT) != 0:
		// A folder inside is handled through its parent's events; the
		// workspace itself gone or moved is watched again by the next call.
		if dir == t.ws {
			t.dirty = true
		}
		return
	case name == "" || t.mode != modeWatch:
		return
	}
	p := filepath.Join(dir, name)
	if mask&syscall.IN_ISDIR == 0 {
		if mask&fileEvents != 0 {
			w.recordLocked(t, p)
		}
		return
	}
	switch {
	case mask&syscall.IN_MOVED_FROM != 0:
		w.unwatchUnderLocked(t, p)
	case mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0 && !excluded[name]:
		// Files made in it before its watch landed, or moved in with it,
		// are found by reading it.
		if err := w.watchLocked(t, p, true); err != nil {
			w.degradeLocked(t, err)
		}
	}
}
