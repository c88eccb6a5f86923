package config

import (
	"io/fs"
	"syscall"
)

// fileID is what a stat says about a file's identity and last change: an
// edit, a replacement (rename over it) or a touch changes at least one of
// them, ctime included, which no caller can set.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // unix nanoseconds
}

func fileIDOf(st fs.FileInfo) (fileID, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{
		dev: sys.Dev, ino: sys.Ino, size: st.Size(),
		mtime: st.ModTime().UnixNano(),
		ctime: sys.Ctim.Sec*1e9 + sys.Ctim.Nsec,
	}, true
}
