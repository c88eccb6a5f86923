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
//
// The kernel's queue of the instance (max_queued_events) is every
// workspace's, so it is drained as events arrive (drainLoop), not only when
// a call begins or ends: one user's process writing thousands of files
// between its calls overflowed it, and the overflow cost every other user's
// running call its report. Each workspace's pending events are bounded on
// their own (maxPending).
type inotify struct {
	fd   int             // -1 while no workspace is watched
	file *os.File        // fd, registered with the runtime's poller
	buf  []byte          // one read of the queue
	wds  map[int32]*tree // every watch, by descriptor: whose it is
}

func newInotify() inotify { return inotify{fd: -1, wds: map[int32]*tree{}} }

// event is one inotify event read for a tree, with the queue read that
// returned it.
type event struct {
	wd   int32
	mask uint32
	seq  uint64
	name string
}

// pending are a tree's events read and not yet handled, in the order
// read. Guarded by Watcher.mu.
type pending struct {
	evs  []event
	full bool // past maxPending: evs is one overflow, later events are dropped
}

// add queues ev, bounded by limit; one equal to the last (a file written
// again) only moves the last to ev's read, as the kernel merges them.
func (q *pending) add(ev event, limit int) {
	switch n := len(q.evs); {
	case q.full:
		return
	case n > 0 && q.evs[n-1].wd == ev.wd && q.evs[n-1].mask == ev.mask && q.evs[n-1].name == ev.name:
		q.evs[n-1].seq = ev.seq
		return
	case n >= limit || ev.mask&syscall.IN_Q_OVERFLOW != 0:
		// Never appended to in place: a tree's call may be handling the
		// events taken before.
		q.evs = []event{{wd: -1, mask: syscall.IN_Q_OVERFLOW, seq: ev.seq}}
		q.full = n >= limit
		return
	}
	q.evs = append(q.evs, ev)
}

// take removes and returns the events read up to upTo.
func (q *pending) take(upTo uint64) []event {
	n := 0
	for n < len(q.evs) && q.evs[n].seq <= upTo {
		n++
	}
	if n == 0 {
		return nil
	}
	evs := q.evs[:n:n]
	if q.evs = q.evs[n:]; len(q.evs) == 0 {
		q.evs, q.full = nil, false
	}
	return evs
}

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
	if !w.openInotify() {
		w.setModeLocked(t, modeWalk) // the instance limit: walk
		return
	}
	if err := w.watchLocked(t, t.ws, 0); err != nil {
		w.degradeLocked(t, err)
		return
	}
	w.setModeLocked(t, modeWatch)
}

// openInotify opens the instance if no workspace has, reporting whether
// it is open.
func (w *Watcher) openInotify() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ino.fd < 0 {
		fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
		if err != nil {
			return false
		}
		w.ino.fd, w.ino.file = fd, os.NewFile(uintptr(fd), "inotify")
		go w.drainLoop(w.ino.file)
	}
	return true
}

// drainLoop reads the queue of the instance f whenever it has events, until
// f is no longer the Watcher's. Each read is made holding the Watcher's
// lock, as a call's are, so the order of reads (seq) stays the order in
// which events were queued.
func (w *Watcher) drainLoop(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(uintptr) bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.ino.file != f {
			return true // closed: the loop ends, and f.Close with it
		}
		w.readAllLocked()
		return false // empty: wait until the kernel queues more
	})
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
// read, one made after by an event. With report set (the queue read that
// saw a folder made or moved in) the files found are recorded as changed
// at that read.
//
// dir is opened first and the watch put on the folder opened, which must
// lie where dir says inside t's workspace: the path of a folder made
// during a call is read later, when a symlink may stand on its way (an
// agent renames a parent away and puts a symlink in its place), and
// watching through it would take another workspace's watches.
func (w *Watcher) watchLocked(t *tree, dir string, report uint64) error {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil // unreadable, gone, or now a symlink: skipped, as a walk skips it
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := w.addWatch(t, dir, self); err != nil {
		return err
	}
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
		case report > 0 && d.Type().IsRegular():
			w.recordLocked(t, p, report)
		}
	}
	return nil
}

// addWatch watches the folder open as self for t if it is dir (see
// insideLocked), one hold of the Watcher's lock: no other tree adds or
// removes a watch of the descriptor the kernel returns meanwhile.
func (w *Watcher) addWatch(t *tree, dir, self string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ino.fd < 0 {
		return errNoWatches // closed: t was released
	}
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
	// The kernel gives a folder watched again the same descriptor: a
	// folder moved within t gets its new path, one moved in from another
	// workspace changes owner (the other forgets it when it handles the
	// move).
	w.ino.wds[int32(wd)] = t
	t.wds[int32(wd)] = dir
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

// unwatchLocked removes every watch of t.
func (w *Watcher) unwatchLocked(t *tree) {
	n := 0
	for wd := range t.wds {
		w.forgetLocked(t, wd, &n)
	}
}

// unwatchUnderLocked removes t's watches of dir and the folders under it
// (a folder moved away).
func (w *Watcher) unwatchUnderLocked(t *tree, dir string) {
	n := 0
	for wd, p := range t.wds {
		if isWithin(p, dir) {
			w.forgetLocked(t, wd, &n)
		}
	}
}

// forgetLocked removes one watch of t, if another workspace has not taken
// it, in one hold of the Watcher's lock; its IN_IGNORED, read later, finds
// it gone. Every drainEvery removals (counted in n) it reads the queue,
// which would overflow for every workspace with the IN_IGNORED of one
// large folder moved away.
func (w *Watcher) forgetLocked(t *tree, wd int32, n *int) {
	delete(t.wds, wd)
	w.mu.Lock()
	removed := w.ino.wds[wd] == t
	if removed {
		_, _ = syscall.InotifyRmWatch(w.ino.fd, uint32(wd))
		delete(w.ino.wds, wd)
	}
	w.mu.Unlock()
	if removed {
		if *n++; *n%drainEvery == 0 {
			w.drain()
		}
	}
}

// drainEvery is how many watches are removed between two reads of the
// queue: well under its default length (max_queued_events, 16,384).
const drainEvery = 1024

// closeLocked closes the instance once no workspace is watched.
func (w *Watcher) closeLocked() {
	if w.ino.fd >= 0 {
		// Closed without the lock: Close waits for drainLoop's read, which
		// needs the lock to see it is over.
		go w.ino.file.Close()
		w.ino.fd, w.ino.file = -1, nil
	}
	clear(w.ino.wds)
	w.ino.buf = nil
}

// readLocked reads the queue once, without blocking, giving each event to
// its tree (trees' own calls handle them); it reports whether it read any.
func (w *Watcher) readLocked() bool {
	if w.ino.fd < 0 {
		return false
	}
	if w.ino.buf == nil {
		w.ino.buf = make([]byte, 64<<10)
	}
	n, err := syscall.Read(w.ino.fd, w.ino.buf)
	for err == syscall.EINTR {
		n, err = syscall.Read(w.ino.fd, w.ino.buf)
	}
	if err != nil || n <= 0 {
		return false // EAGAIN: empty
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
		w.giveLocked(ev.Wd, ev.Mask, name)
	}
	return true
}

// giveLocked queues one event for the tree it is of: every tree for an
// overflow, none for a watch no tree has, and a file's only while calls
// run in its tree (nothing else wants it).
func (w *Watcher) giveLocked(wd int32, mask uint32, name []byte) {
	if mask&syscall.IN_Q_OVERFLOW != 0 {
		for _, t := range w.trees {
			t.pending.add(event{wd: -1, mask: mask, seq: w.seq}, w.maxPending)
		}
		return
	}
	t := w.ino.wds[wd]
	switch {
	case t == nil:
		return // removed, or another workspace's since
	case mask&syscall.IN_IGNORED != 0:
		delete(w.ino.wds, wd) // the folder is gone; its tree forgets it
	case mask&(syscall.IN_ISDIR|syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_UNMOUNT) == 0 &&
		(mask&fileEvents == 0 || t.calling == 0):
		return
	}
	t.pending.add(event{wd: wd, mask: mask, seq: w.seq, name: string(name)}, w.maxPending)
}

// eventLocked handles one of t's events.
func (w *Watcher) eventLocked(t *tree, ev *event) {
	mask := ev.mask
	if mask&syscall.IN_Q_OVERFLOW != 0 {
		// Events were dropped: the running calls cannot know their files,
		// and new folders may have no watch.
		w.loseLocked(t)
		t.dirty = true
		return
	}
	dir, ok := t.wds[ev.wd]
	switch {
	case !ok:
		return // removed since
	case mask&syscall.IN_IGNORED != 0:
		delete(t.wds, ev.wd)
		return
	case mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_UNMOUNT) != 0:
		// A folder inside is handled through its parent's events; the
		// workspace itself gone or moved is watched again by the next call.
		if dir == t.ws {
			t.dirty = true
		}
		return
	case ev.name == "" || t.mode != modeWatch:
		return
	}
	p := filepath.Join(dir, ev.name)
	if mask&syscall.IN_ISDIR == 0 {
		if mask&fileEvents != 0 {
			w.recordLocked(t, p, ev.seq)
		}
		return
	}
	switch {
	case mask&syscall.IN_MOVED_FROM != 0:
		w.hook(p)
		w.unwatchUnderLocked(t, p)
	case mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0 && !excluded[ev.name]:
		// Files made in it before its watch landed, or moved in with it,
		// are found by reading it.
		w.hook(p)
		if err := w.watchLocked(t, p, ev.seq); err != nil {
			w.degradeLocked(t, err)
		}
	}
}

// hook calls the test's watchHook, if any.
func (w *Watcher) hook(dir string) {
	if w.watchHook != nil {
		w.watchHook(dir)
	}
}
