// Package workspace lays out a thread's files on disk, as DeerFlow does:
// <data>/users/<user>/threads/<thread>/user-data/workspace is what an agent
// sees as /mnt/user-data/workspace, and a stdio server for that thread runs
// there with its temporary files in workspace/.mcp/tmp.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
)

// TmpSubdir is the stdio servers' temporary folder inside the workspace.
const TmpSubdir = ".mcp/tmp"

// DefaultThread is the thread of a call that names none.
const DefaultThread = "default"

// ErrInvalidID is wrapped by ValidateID's errors.
var ErrInvalidID = errors.New("invalid id")

// ValidateID is CheckID with an error that names the field and wraps
// ErrInvalidID.
func ValidateID(field, id string) error {
	if err := CheckID(id); err != nil {
		return fmt.Errorf("%w: %s %v", ErrInvalidID, field, err)
	}
	return nil
}

// CheckID is the one rule for a user or thread id, which names a folder on
// disk (users/<id>/threads/<id>/...): not empty, at most 128 bytes, not "."
// or "..", no path separator, NUL or control character. Its error does not
// name the field; ValidateID's does.
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("must not be empty")
	case len(id) > 128:
		return errors.New("must be at most 128 bytes")
	case id == "." || id == "..":
		return errors.New("must not be . or ..")
	case strings.ContainsAny(id, "/\\\x00"):
		return errors.New("must not contain a path separator or NUL")
	}
	for _, r := range id {
		if unicode.IsControl(r) { // C0, DEL and C1 (U+0080–U+009F, e.g. NEL)
			return errors.New("must not contain control characters")
		}
	}
	return nil
}

// Thread is one thread's folders.
type Thread struct {
	Root      string // <data>/users/<user>/threads/<thread>/user-data
	Workspace string // Root/workspace
	Tmp       string // Workspace/.mcp/tmp
}

// Paths returns the folders of user's thread under dataDir without touching
// the disk (ids are validated).
func Paths(dataDir, user, thread string) (Thread, error) {
	if thread == "" {
		thread = DefaultThread
	}
	if err := ValidateID("user_id", user); err != nil {
		return Thread{}, err
	}
	if err := ValidateID("thread_id", thread); err != nil {
		return Thread{}, err
	}
	base, err := filepath.Abs(dataDir)
	if err != nil {
		return Thread{}, fmt.Errorf("workspace: %w", err)
	}
	root := filepath.Join(base, "users", user, "threads", thread, "user-data")
	t := Thread{Root: root, Workspace: filepath.Join(root, "workspace")}
	t.Tmp = filepath.Join(t.Workspace, TmpSubdir)
	return t, nil
}

// Create makes the folders, the temporary one private to the host's user.
// What lies inside the thread's user data is the agent's to write, so the
// folders are made through a root at it (os.Root): no symlink there leads
// out of it, however it is swapped meanwhile, and a workspace, .mcp or tmp
// that is not a folder of its own (a symlink, a file) is an error.
func (t Thread) Create() error {
	if err := os.MkdirAll(t.Root, 0o700); err != nil {
		return fmt.Errorf("workspace: create %s: %w", t.Root, err)
	}
	root, err := os.OpenRoot(t.Root)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	rel := ""
	for _, name := range append([]string{"workspace"}, strings.Split(TmpSubdir, "/")...) {
		rel = path.Join(rel, name)
		err := root.Mkdir(rel, 0o700)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("workspace: the thread's %s cannot be made (a symlink or a file stands on its way): %w", rel, err)
		}
		if info, err := root.Lstat(rel); err != nil || !info.IsDir() {
			return fmt.Errorf("workspace: the thread's %s is not a folder of its own (a symlink or a file stands there)", rel)
		}
	}
	if err := root.Chmod(rel, 0o700); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}
