package virtualpath_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

// env is a fake thread layout: <tmp>/users/u/threads/t/user-data with
// workspace/ under it, plus a sibling folder outside the user-data root.
type env struct {
	tmp     string // resolved temp dir
	root    string // <tmp>/users/u/threads/t/user-data
	ws      string // <root>/workspace
	outside string // <tmp>/outside, not inside root
}

func newEnv(t testing.TB) env {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := env{
		tmp:     tmp,
		root:    filepath.Join(tmp, "users", "u", "threads", "t", "user-data"),
		outside: filepath.Join(tmp, "outside"),
	}
	e.ws = filepath.Join(e.root, "workspace")
	for _, d := range []string{e.ws, e.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// write creates the file p (and its parents) with content, returning p.
func write(t testing.TB, p, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t testing.TB, target, link string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	return link
}

const vws = virtualpath.Prefix + "/workspace/"
