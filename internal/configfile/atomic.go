package configfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// newFileMode is the mode of a config file this package creates: the file may
// hold secrets (API keys, OAuth client secrets), so only its owner reads it.
// An existing file keeps its own mode.
const newFileMode fs.FileMode = 0o600

// dirMode is the mode of parent directories created for a new config file or
// its lock file (before the umask, as mkdir -p).
const dirMode fs.FileMode = 0o755

// staleTempAge is how old a leftover temp file must be before Update removes
// it (see File.Update).
const staleTempAge = time.Minute

// maxSymlinks bounds a symlink chain, as the kernel's ELOOP limit does.
const maxSymlinks = 40

// fsOps are the file-system calls of an atomic write that a test can replace
// to inject a fault: a rename that fails (with EBUSY, to simulate a bind-mount
// point, which cannot be created without root) and a temp-file write that
// fails. Production code always uses osOps.
type fsOps struct {
	rename    func(oldpath, newpath string) error
	writeTemp func(f *os.File, data []byte) error
}

func osOps() fsOps {
	return fsOps{
		rename: os.Rename,
		writeTemp: func(f *os.File, data []byte) error {
			_, err := f.Write(data)
			return err
		},
	}
}

// WriteAtomic writes data to path atomically (no locking), following
// DeerFlow's atomic_write_extensions_config:
//
//  1. If path is a symlink, the file written is the link's final target and
//     the link itself is kept; parent directories are created.
//  2. The existing file's mode is remembered (a new file gets 0o600); its
//     owner and group are kept where the process may set them.
//  3. The data goes to a temp file ".<name>.<random>.tmp" in the target's own
//     directory (so the rename cannot cross file systems), which is given the
//     mode, then fsynced and closed.
//  4. The temp file is renamed over the target, then the directory is fsynced
//     (best effort) so the rename itself survives a crash.
//  5. On every path out that did not rename it, the temp file is removed.
//
// Readers therefore see either the old or the new content, never a mix, and any
// failure before the rename leaves the old file untouched.
//
// The one exception is a target that is a bind-mount point (Docker mounts a
// single config file that way): the kernel refuses to rename over it with
// EBUSY. Then the data is written in place (truncate, write, fsync), and a
// warning is logged the first time this happens to a target in this process
// (later times at debug level), because a crash during that write can leave
// the file truncated.
//
// log may be nil.
func WriteAtomic(path string, data []byte, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("write extensions config %s: %w", path, err)
	}
	return writeAtomic(abs, data, log, osOps())
}

func writeAtomic(path string, data []byte, log *slog.Logger, ops fsOps) (err error) {
	target, err := resolveTarget(path)
	if err != nil {
		return fmt.Errorf("write extensions config %s: %w", path, err)
	}
	dir, name := filepath.Dir(target), filepath.Base(target)
	fail := func(step string, err error) error {
		return fmt.Errorf("write extensions config %s: %s: %w", target, step, err)
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fail("create parent directory", err)
	}

	mode := newFileMode
	var owner *syscall.Stat_t
	switch st, err := os.Stat(target); {
	case err == nil:
		mode = st.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		owner, _ = st.Sys().(*syscall.Stat_t)
	case !errors.Is(err, fs.ErrNotExist):
		return fail("stat", err)
	}

	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp") // created 0o600, O_EXCL
	if err != nil {
		return fail("create temp file", err)
	}
	tmpPath := tmp.Name()
	renamed := false
	defer func() {
		_ = tmp.Close() // already closed unless a step before the close failed
		if renamed {
			return // the name now belongs to nobody; never remove by name what is not ours
		}
		if rerr := os.Remove(tmpPath); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			log.Warn("Could not remove temporary extensions config file", "path", tmpPath, "error", rerr.Error())
		}
	}()

	if err := ops.writeTemp(tmp, data); err != nil {
		return fail("write temp file", err)
	}
	if owner != nil {
		// Best effort: keep a group that grants read access (e.g. 0o640 with a
		// readers group). Only root may give the file away, so EPERM is
		// expected and ignored.
		if cerr := tmp.Chown(int(owner.Uid), int(owner.Gid)); cerr != nil {
			log.Debug("could not keep the extensions config file's owner", "path", target, "error", cerr.Error())
		}
	}
	// After chown, which may clear set-id bits.
	if err := tmp.Chmod(mode); err != nil {
		return fail("set temp file mode", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("fsync temp file", err)
	}
	if err := tmp.Close(); err != nil {
		return fail("close temp file", err)
	}

	if err := ops.rename(tmpPath, target); err == nil {
		renamed = true
	} else {
		if !errors.Is(err, syscall.EBUSY) {
			return fail("rename temp file over target", err)
		}
		busyWarnings.log(log, target)
		if err := overwriteInPlace(target, data); err != nil {
			return fail("overwrite in place", err)
		}
	}
	syncDir(dir, log)
	return nil
}

// overwriteInPlace writes data into the existing target without replacing its
// inode: the fallback for a bind-mount point. A crash during it can leave the
// file short.
func overwriteInPlace(target string, data []byte) error {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs dir so a rename in it is durable. Failure is only logged: the
// data is already in place, and some file systems refuse to fsync a directory.
func syncDir(dir string, log *slog.Logger) {
	d, err := os.Open(dir)
	if err != nil {
		log.Debug("could not open extensions config directory to fsync it", "path", dir, "error", err.Error())
		return
	}
	if err := d.Sync(); err != nil {
		log.Debug("could not fsync extensions config directory", "path", dir, "error", err.Error())
	}
	_ = d.Close()
}

// resolveTarget returns the file a write to path lands on: path itself, or, when
// path is a symlink, the end of its chain of links. A dangling link resolves to
// the missing file it names, which the write then creates. A relative link is
// read against the real directory holding the link (its parent resolved), as
// the kernel does, not against the path as spelled.
func resolveTarget(path string) (string, error) {
	p := path
	for range maxSymlinks {
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", fmt.Errorf("resolve target: %w", err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("resolve target: %w", err)
		}
		if !filepath.IsAbs(link) {
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return "", fmt.Errorf("resolve target: %w", err)
			}
			link = filepath.Join(dir, link)
		}
		p = link
	}
	return "", fmt.Errorf("resolve symlink %s: %w", path, syscall.ELOOP)
}

// busyWarnings is the process's record of targets already warned about.
var busyWarnings = &warnedTargets{seen: map[string]bool{}}

// warnedTargets logs the in-place fallback at warning level once per target
// and at debug level afterwards, as DeerFlow does.
type warnedTargets struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (w *warnedTargets) log(log *slog.Logger, target string) {
	key := target
	if real, err := filepath.EvalSymlinks(target); err == nil {
		key = real
	}
	w.mu.Lock()
	first := !w.seen[key]
	w.seen[key] = true
	w.mu.Unlock()

	level := slog.LevelDebug
	if first {
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, fmt.Sprintf("Cannot atomically replace %s (it is a bind-mount point); overwriting in place. A crash during this write can leave the file truncated.", target), "path", target)
}

// removeStaleTemps deletes ".<name>.*.tmp" files beside target older than
// staleTempAge: temp files of a writer killed between creating and renaming
// them. Called only under both locks. Failures are logged and ignored.
func (f *File) removeStaleTemps(target string) {
	dir, name := filepath.Dir(target), filepath.Base(target)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // a missing directory has no temp files; the write reports real errors
	}
	prefix := "." + name + "."
	cutoff := time.Now().Add(-staleTempAge)
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, ".tmp") || len(n) <= len(prefix)+len(".tmp") {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		p := filepath.Join(dir, n)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.log.Warn("Could not remove stale temporary extensions config file", "path", p, "error", err.Error())
			continue
		}
		f.log.Info("removed stale temporary extensions config file left by an interrupted writer", "path", p)
	}
}
