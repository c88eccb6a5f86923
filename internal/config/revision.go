package config

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/antler-mcp/antler/internal/envvar"
)

// Two bounds keep a stat-only check from hiding an edit. A hash is reused
// only when it was read more than racyWindow after the file's last change
// (ctime): a write in the same timestamp tick as the read could otherwise
// leave mtime, ctime and size as they were (git's "racily clean" rule; 2 s
// covers the coarsest timestamps in use). And a hash is reused for at most
// rehashAfter, so a miss the first bound cannot rule out (a file server
// whose clock runs behind this host's) lasts no longer than that.
const (
	racyWindow  = 2 * time.Second
	rehashAfter = time.Second
)

// FileStat is what one stat of a file says: whether it is there (a
// non-directory that can be stat'ed), its size and mtime, and where the
// platform tells them its device, inode and ctime. Comparable.
type FileStat struct {
	exists      bool
	size, mtime int64
	id          fileID
	idOK        bool
}

// StatFile stats path (following symlinks, as os.Open does).
func StatFile(path string) FileStat {
	st, err := os.Stat(path)
	if err != nil || st.IsDir() {
		return FileStat{}
	}
	f := FileStat{exists: true, size: st.Size(), mtime: st.ModTime().UnixNano()}
	f.id, f.idOK = fileIDOf(st)
	return f
}

// Exists reports whether the stat found a file that is not a directory.
func (f FileStat) Exists() bool { return f.exists }

// Size is the file's size in bytes.
func (f FileStat) Size() int64 { return f.size }

// ModTime is the file's mtime in unix nanoseconds.
func (f FileStat) ModTime() int64 { return f.mtime }

// Freshness is what one stat says about a Revision.
type Freshness int

const (
	// Changed: the file's identity (device, inode, size, mtime, ctime)
	// differs, or cannot be told: a possible edit, to be read before
	// answering.
	Changed Freshness = iota
	// Recheck: the identity is unchanged but the hash is too old, or was
	// read too close to the file's last change, to prove the content: a
	// re-hash is due, yet nothing visible suggests an edit.
	Recheck
	// Fresh: the revision still stands for the file.
	Fresh
)

// Revision is one read of a file: its signature and the identity the open
// file had then. The zero Revision is Changed against every file.
type Revision struct {
	Path   string
	Sig    Signature
	id     fileID
	idOK   bool
	readAt int64 // unix nanoseconds, taken before the file was opened
}

// Check decides from st, a stat of r.Path taken now, whether r still stands
// for the file. A different identity is Changed; the same identity is Fresh
// only while r was read more than 2 s after the file's ctime and less than
// 1 s ago, and Recheck otherwise. Where the platform gives no identity
// (off Linux) every check is Changed.
func (r Revision) Check(st FileStat, now time.Time) Freshness {
	if !r.idOK || !st.idOK || st.id != r.id {
		return Changed
	}
	if r.readAt-st.id.ctime <= int64(racyWindow) || now.UnixNano()-r.readAt >= int64(rehashAfter) {
		return Recheck
	}
	return Fresh
}

// Locator finds the configuration file as Locate does, for a caller that
// looks on every read. The --config name is resolved once; the two
// variables are looked up on every call, since the lookup is live (the
// process environment or a caller's map can change), and only the join of a
// relative value is kept; the default names are stat'ed in order on every
// call, so one that appears later is found. Safe for concurrent use.
type Locator struct {
	explicit string // absolute; "" without the flag
	lookup   envvar.Lookup
	dir      string
	defaults []string                  // absolute, in order
	env      atomic.Pointer[[2]string] // last variable value and its absolute path
}

// NewLocator returns a Locator for Locate's arguments.
func NewLocator(explicit string, lookup envvar.Lookup, dir string) *Locator {
	if lookup == nil {
		lookup = envvar.OS
	}
	l := &Locator{lookup: lookup, dir: dir}
	if explicit != "" {
		l.explicit = l.abs(explicit)
	}
	for _, name := range DefaultNames {
		l.defaults = append(l.defaults, filepath.Join(dir, name))
	}
	return l
}

func (l *Locator) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(l.dir, p)
}

// Find returns the path Locate would and the file's stat, from the same
// stat that found a default file: one stat for the file however it was
// named. A file named by the flag or a variable is returned whether or not
// it exists; nothing found is "".
func (l *Locator) Find() (path string, st FileStat) {
	if l.explicit != "" {
		return l.explicit, StatFile(l.explicit)
	}
	for _, name := range []string{EnvPath, EnvDeerFlowPath} {
		if v, _ := l.lookup(name); v != "" {
			if last := l.env.Load(); last != nil && last[0] == v {
				path = last[1]
			} else {
				path = l.abs(v)
				l.env.Store(&[2]string{v, path})
			}
			return path, StatFile(path)
		}
	}
	for _, p := range l.defaults {
		if st := StatFile(p); st.exists {
			return p, st
		}
	}
	return "", FileStat{}
}
