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
