// Package workspace lays out a thread's files on disk, as DeerFlow does:
// <data>/users/<user>/threads/<thread>/user-data/workspace is what an agent
// sees as /mnt/user-data/workspace, and a stdio server for that thread runs
// there with its temporary files in workspace/.mcp/tmp.
package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/antler-mcp/antler/internal/settings"
)

// TmpSubdir is the stdio servers' temporary folder inside the workspace.
const TmpSubdir = ".mcp/tmp"

// DefaultThread is the thread of a call that names none.
const DefaultThread = "default"

// ErrInvalidID is wrapped by ValidateID's errors.
var ErrInvalidID = errors.New("invalid id")

// ValidateID checks a user or thread id that becomes a folder name (see
// settings.ValidateUserID: no separators, no "." or "..", no NUL or control
// characters, at most 128 bytes); the error names the field.
func ValidateID(field, id string) error {
	if err := settings.ValidateUserID(id); err != nil {
		return fmt.Errorf("%w: %s %v", ErrInvalidID, field, err)
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
func (t Thread) Create() error {
	if err := os.MkdirAll(t.Tmp, 0o700); err != nil {
		return fmt.Errorf("workspace: create %s: %w", t.Workspace, err)
	}
	if err := os.Chmod(t.Tmp, 0o700); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}
