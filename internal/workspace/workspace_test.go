package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/workspace"
)

func TestPathsValidateIDsAndLayOutTheThread(t *testing.T) {
	data := t.TempDir()
	for _, tc := range []struct{ user, thread, wantErr string }{
		{"alice", "t1", ""},
		{"alice", "", ""}, // the default thread
		{"..", "t1", "user_id"},
		{"alice", "../x", "thread_id"},
		{"a/b", "t1", "user_id"},
		{"alice", "t\x00", "thread_id"},
	} {
		th, err := workspace.Paths(data, tc.user, tc.thread)
		if tc.wantErr != "" {
			if !errors.Is(err, workspace.ErrInvalidID) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Paths(%q, %q) = %v, want an error naming %s", tc.user, tc.thread, err, tc.wantErr)
			}
			continue
		}
		thread := tc.thread
		if thread == "" {
			thread = workspace.DefaultThread
		}
		want := filepath.Join(data, "users", tc.user, "threads", thread, "user-data", "workspace")
		if err != nil || th.Workspace != want || th.Tmp != filepath.Join(want, ".mcp", "tmp") {
			t.Errorf("Paths(%q, %q) = %+v, %v", tc.user, tc.thread, th, err)
		}
		if _, err := os.Stat(th.Workspace); !os.IsNotExist(err) {
			t.Error("Paths touched the disk")
		}
		if err := th.Create(); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(th.Tmp); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("tmp %v %v, want 0700", st, err)
		}
	}
}

func TestCheckID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"simple", "alice", true},
		{"email-like", "alice@example.com", true},
		{"dots inside", "a.b..c", true},
		{"leading dot", ".hidden", true},
		{"unicode", "josé-日本", true},
		{"spaces", "Alice Smith", true},
		{"128 bytes", strings.Repeat("a", 128), true},
		{"128 bytes of multibyte runes", strings.Repeat("é", 64), true},

		{"empty", "", false},
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"slash", "a/b", false},
		{"traversal", "../etc", false},
		{"backslash", `a\b`, false},
		{"NUL", "a\x00b", false},
		{"129 bytes", strings.Repeat("a", 129), false},
		{"130 bytes of multibyte runes", strings.Repeat("é", 65), false},
		{"newline", "a\nb", false},
		{"tab", "a\tb", false},
		{"carriage return", "a\rb", false},
		{"escape", "a\x1b[31m", false},
		{"DEL", "a\x7fb", false},
		{"C1 next line", "a\u0085b", false},
		{"C1 control sequence introducer", "a\u009b31m", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := workspace.CheckID(tt.id)
			if (err == nil) != tt.ok {
				t.Errorf("CheckID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
			}
		})
	}
}

// TestCreateFollowsNoSymlink performs what an agent could do in its own
// workspace: put a symlink to another user's workspace where the thread's
// .mcp, .mcp/tmp or the workspace itself goes. Create made the temporary
// folder where it pointed and chmod-ed it, and the thread's stdio servers
// then got TMPDIR inside the other user's folder. Create now refuses, and
// nothing is made or changed on the other side.
func TestCreateFollowsNoSymlink(t *testing.T) {
	for _, at := range []string{"workspace", "workspace/.mcp", "workspace/.mcp/tmp"} {
		t.Run(at, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			alice, bob := aliceAndBob(t, data)
			link := filepath.Join(alice.Root, at)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(bob.Workspace, link); err != nil {
				t.Fatal(err)
			}
			if err := alice.Create(); err == nil || !strings.Contains(err.Error(), "is not a folder of its own") {
				t.Fatalf("Create with %s a symlink to bob's workspace: %v, want a refusal", at, err)
			}
			entries, _ := os.ReadDir(bob.Workspace)
			info, _ := os.Stat(bob.Workspace)
			if len(entries) != 0 || info.Mode().Perm() != 0o755 {
				t.Errorf("bob's workspace was changed: %d entries, mode %v", len(entries), info.Mode().Perm())
			}
		})
	}
	t.Run("a plain thread", func(t *testing.T) {
		t.Parallel()
		th, err := workspace.Paths(t.TempDir(), "alice", "t1")
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // and again, when it exists
			if err := th.Create(); err != nil {
				t.Fatal(err)
			}
		}
		if info, err := os.Lstat(th.Tmp); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
			t.Fatalf("the temporary folder: %v, %v", info, err)
		}
	})
}

// aliceAndBob are the threads t1 of alice and bob under data, bob's
// workspace made (0755) and alice's not.
func aliceAndBob(t *testing.T, data string) (alice, bob workspace.Thread) {
	t.Helper()
	alice, err := workspace.Paths(data, "alice", "t1")
	if err != nil {
		t.Fatal(err)
	}
	if bob, err = workspace.Paths(data, "bob", "t1"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(bob.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	return alice, bob
}
