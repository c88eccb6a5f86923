// Package configfile serialises read-modify-write cycles on the extensions
// config file and writes it atomically (a temporary file renamed over the
// original, under a lock), as DeerFlow's config router does.
//
// Every writer — the config admin endpoints, tools, a second host process on
// the same file — goes through File.Update, which holds two locks across the
// whole read → fn → write → after cycle:
//
//   - a process-wide mutex per lock file (see pathLocks), so goroutines and
//     separate File values in one process queue without polling, and
//   - an advisory exclusive flock(2) on the sidecar "<dir>/.<base>.lock", so
//     other processes (other hosts, and DeerFlow itself, which locks the same
//     sidecar the same way) wait too.
//
// Locking only the final rename would still lose updates: two writers would
// read the same old file and the second rename would drop the first change.
//
// The package is Unix-only (flock, directory fsync, EBUSY), like the rest of
// the host.
package configfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/antler-mcp/antler/internal/keylock"
)

// File guards one config file path: an in-process mutex plus an advisory exclusive
// flock on the sidecar "<dir>/.<base>.lock", both held across the whole read → fn → write cycle.
//
// The sidecar sits next to the file that is actually written: when the
// configured path is a symlink, that is the link's final target, so hosts that
// reach one file through different links still exclude each other (DeerFlow
// resolves the link the same way before locking).
//
// The flock is taken with syscall.Flock directly rather than through
// github.com/gofrs/flock: the host is Unix-only, the lock must be polled
// non-blockingly anyway to honour a context, and the sidecar has to be opened
// per cycle (a symlink may be re-pointed between cycles), so the library would
// add a dependency and no behaviour.
//
// A File is safe for concurrent use. Two File values for the same path in one
// process exclude each other twice over: they share the process-wide mutex for
// the lock file, and each cycle opens the sidecar afresh, so their flocks are
// on separate open file descriptions, which flock(2) treats as separate
// holders even within one process. (The shared mutex is what keeps this true
// on NFS, where Linux emulates flock with per-process POSIX locks.)
type File struct {
	path string // as configured
	abs  string // absolute form, used for every file operation
	log  *slog.Logger
	ops  fsOps // real file-system calls; tests replace them to inject faults
	max  int64 // WithMaxSize; zero reads any size
}

// ErrTooLarge is wrapped by Read for a file above the size WithMaxSize set.
var ErrTooLarge = errors.New("extensions config file is too large")

// WithMaxSize makes Read refuse a file larger than n bytes, by its size,
// without reading it. Call it before the File is shared.
func (f *File) WithMaxSize(n int64) *File {
	f.max = n
	return f
}

// New returns the guard for path (the path as configured; a symlink is resolved at write time
// and kept). log may be nil. A relative path is made absolute now, against the
// current working directory.
//
// New opens nothing; every cycle resolves the path and opens the sidecar
// afresh. Two File values for the same path in one process still exclude each
// other: they share the process-wide mutex, and their flocks are on separate
// open file descriptions (see File).
func New(path string, log *slog.Logger) *File {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path // Getwd failed; every operation will report the real error
	}
	return &File{path: path, abs: abs, log: log, ops: osOps()}
}

// Path is the configured path.
func (f *File) Path() string { return f.path }

// Update takes both locks, reads the current bytes (exists=false and nil data
// when the file is missing), and calls fn with them.
//
//   - fn returns an error: nothing is written, after is not called, and Update
//     returns that error as is (errors.Is and errors.As see it).
//   - fn returns nil data and no error: "no change"; nothing is written and
//     after is not called.
//   - fn returns non-nil data (an empty slice is an empty file): the data is
//     written with WriteAtomic, then after (if not nil) is called while both
//     locks are still held, so the caller can reload its cache before another
//     writer — in this process or another — gets a turn.
//
// A missing file is created with mode 0o600, because the config may hold
// secrets (API keys, OAuth client secrets), and its parent directories are
// created. An existing file keeps its mode.
//
// Waiting for either lock honours ctx; if ctx is done before both are held,
// Update returns ctx.Err() without reading or writing. Once both are held the
// cycle runs to completion regardless of ctx, so a cancelled request never
// leaves a half-finished cycle (DeerFlow takes its lock inside the worker
// thread for the same reason).
//
// Before writing, Update removes temp files that an earlier writer was killed
// before it could clean up: ".<name>.*.tmp" beside the target that are older
// than a minute. Under the lock no cooperating writer can own one, and the age
// limit spares a writer that does not take the lock. DeerFlow leaves them.
func (f *File) Update(ctx context.Context, fn func(current []byte, exists bool) ([]byte, error), after func()) error {
	unlock, target, err := f.lock(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()

	current, exists, err := f.readLocked()
	if err != nil {
		return err
	}
	data, err := fn(current, exists)
	if err != nil {
		return err
	}
	if data == nil {
		return nil
	}
	f.removeStaleTemps(target)
	if err := writeAtomic(f.abs, data, f.log, f.ops); err != nil {
		return err
	}
	if after != nil {
		after()
	}
	return nil
}

// Read takes both locks and returns the current bytes (GET reads under the
// locks too, so it never sees a state between two steps of a writer's cycle).
// A missing file is data=nil, exists=false and no error.
func (f *File) Read(ctx context.Context) (data []byte, exists bool, err error) {
	unlock, _, err := f.lock(ctx, false)
	if errors.Is(err, errNoSidecar) {
		// A read-only folder (a mounted ConfigMap, say) or one nobody has
		// written through a lock yet: nothing to wait for, and writes are
		// whole-file renames, so an unlocked read sees a whole file.
		return f.readLocked()
	}
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	return f.readLocked()
}

func (f *File) readLocked() ([]byte, bool, error) {
	fh, err := os.Open(f.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read extensions config %s: %w", f.path, err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if f.max > 0 {
		r = io.LimitReader(fh, f.max+1) // a file that grows while it is read is caught too
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, false, fmt.Errorf("read extensions config %s: %w", f.path, err)
	}
	if f.max > 0 && int64(len(data)) > f.max {
		return nil, true, fmt.Errorf("read extensions config %s: %w: above the limit of %d bytes", f.path, ErrTooLarge, f.max)
	}
	return data, true, nil
}

// lock takes the process-wide mutex and then the flock for the file's sidecar.
// It returns the release function and the resolved target the sidecar belongs
// to. Without create, a sidecar (or folder) that does not exist or cannot be
// opened is errNoSidecar, and nothing is created.
func (f *File) lock(ctx context.Context, create bool) (unlock func(), target string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	target, err = resolveTarget(f.abs)
	if err != nil {
		return nil, "", fmt.Errorf("lock extensions config %s: %w", f.path, err)
	}
	lockPath := sidecarPath(target)

	// Key the in-process mutex by the sidecar's real location, so paths that
	// reach one directory through different symlinks share it.
	key := lockPath
	if dir, err := filepath.EvalSymlinks(filepath.Dir(lockPath)); err == nil {
		key = filepath.Join(dir, filepath.Base(lockPath))
	}
	release, err := pathLocks.Lock(ctx, key)
	if err != nil {
		return nil, "", err
	}
	lf, err := flockContext(ctx, lockPath, create)
	if err != nil {
		release()
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("lock extensions config %s: %w", f.path, err)
	}
	return func() {
		// Closing the descriptor releases the flock; unlocking first makes
		// the release explicit and independent of any other descriptor.
		_ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
		_ = lf.Close()
		release()
	}, target, nil
}

// sidecarPath is "<dir>/.<base>.lock" for target.
func sidecarPath(target string) string {
	return filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".lock")
}

// Polling bounds for a flock held by someone else: start short so an
// uncontended hand-over is quick, back off so a long hold costs little CPU.
const (
	flockPollMin = time.Millisecond
	flockPollMax = 25 * time.Millisecond
)

// flockContext opens (creating if needed, with its parent directories) the
// lock file and takes an exclusive flock on it, polling non-blockingly so that
// ctx is honoured. A blocking flock cannot be interrupted from Go, and a
// goroutine left blocked in it would take the lock after the caller gave up.
//
// The file is opened read-write where possible (flock emulation on NFS needs a
// writable descriptor), and read-only otherwise (a sidecar created by another
// user). Go opens it close-on-exec, so stdio MCP servers started while the
// lock is held never inherit it.
func flockContext(ctx context.Context, lockPath string, create bool) (*os.File, error) {
	flags := os.O_RDWR
	if create {
		if err := os.MkdirAll(filepath.Dir(lockPath), dirMode); err != nil {
			return nil, fmt.Errorf("create directory for lock file: %w", err)
		}
		flags |= os.O_CREATE
	}
	lf, err := os.OpenFile(lockPath, flags, 0o644)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		lf, err = os.OpenFile(lockPath, os.O_RDONLY, 0)
	}
	if err != nil && !create {
		return nil, fmt.Errorf("%w: %w", errNoSidecar, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	delay := flockPollMin
	for {
		if err := ctx.Err(); err != nil {
			_ = lf.Close()
			return nil, err
		}
		err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return lf, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = lf.Close()
			return nil, fmt.Errorf("flock %s: %w", lockPath, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			_ = lf.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, flockPollMax)
	}
}

// errNoSidecar reports a lock file that a reader may not create.
var errNoSidecar = errors.New("no lock file")

// pathLocks is the process's one table of in-process locks, keyed by sidecar
// path, so every File for one target shares a single mutex.
var pathLocks = &keylock.Table[string]{}
