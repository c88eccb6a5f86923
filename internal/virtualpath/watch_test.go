package virtualpath_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

// call runs act as one call in e's workspace, held by w as a stdio session
// holds it, and returns the changed files the result lists.
func call(t *testing.T, w *virtualpath.Watcher, e env, act func()) []string {
	t.Helper()
	c := w.Begin(e.root, e.ws, e.ws)
	defer c.End()
	act()
	return changedOf(t, c.Rewrite(textResult("done")))
}

// virtual turns paths relative to the workspace into the listed form.
func virtual(rel ...string) []string {
	var out []string
	for _, r := range rel {
		out = append(out, vws+r)
	}
	return out
}

// A call lists the files it created or modified, wherever they are in the
// workspace, and nothing it deleted, nothing in excluded folders, no
// folder and nothing reached through a symlink.
func TestCallChanged(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	tests := []struct {
		name   string
		before []string                  // files present before the session
		setup  func(t *testing.T, e env) // before the call, after the watches
		act    func(t *testing.T, e env) // what the call did
		want   []string                  // listed, relative to the workspace
	}{
		{name: "nothing", before: []string{"a.txt"}, act: func(t *testing.T, e env) {}},
		{name: "created", before: []string{"a.txt"},
			act: func(t *testing.T, e env) {
				write(t, filepath.Join(e.ws, "new.txt"), "n")
				write(t, filepath.Join(e.ws, "old", "x.txt"), "n")
			},
			want: []string{"new.txt", "old/x.txt"}},
		{name: "new nested folders", before: []string{"a.txt"},
			act: func(t *testing.T, e env) {
				// mkdir -p and a file at once: no watch can be on a/b/c
				// before the file is made.
				write(t, filepath.Join(e.ws, "a", "b", "c", "deep.txt"), "n")
				write(t, filepath.Join(e.ws, "a", "top.txt"), "n")
			},
			want: []string{"a/b/c/deep.txt", "a/top.txt"}},
		{name: "appended", before: []string{"a.txt", "b.txt"},
			act: func(t *testing.T, e env) {
				f, err := os.OpenFile(filepath.Join(e.ws, "a.txt"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString("more"); err != nil {
					t.Fatal(err)
				}
				f.Close()
			},
			want: []string{"a.txt"}},
		{name: "written without closing", before: []string{"a.txt"},
			act: func(t *testing.T, e env) {
				f, err := os.OpenFile(filepath.Join(e.ws, "a.txt"), os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				if _, err := f.WriteString("y"); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"a.txt"}},
		{name: "new mtime same size", before: []string{"a.txt", "b.txt"},
			act: func(t *testing.T, e env) {
				later := old.Add(time.Minute)
				if err := os.Chtimes(filepath.Join(e.ws, "b.txt"), later, later); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"b.txt"}},
		{name: "deleted not listed", before: []string{"a.txt", "b.txt"},
			act: func(t *testing.T, e env) {
				write(t, filepath.Join(e.ws, "gone.txt"), "n")
				for _, f := range []string{"a.txt", "gone.txt"} {
					if err := os.Remove(filepath.Join(e.ws, f)); err != nil {
						t.Fatal(err)
					}
				}
			}},
		{name: "excluded folders at any depth", before: []string{"a.txt", "node_modules/old.js", "sub/.git/HEAD"},
			act: func(t *testing.T, e env) {
				for _, p := range []string{
					".mcp/tmp/x", ".git/HEAD", "node_modules/m/index.js", "node_modules/old.js",
					"sub/.mcp/y", "sub/.git/HEAD", "pkg/node_modules/z.js",
					"p/__pycache__/m.pyc", ".venv/bin/python", "x/.cache/c",
					".hg/h", ".svn/s", ".next/n", ".browser-frames/f", ".tool-results/r",
				} {
					write(t, filepath.Join(e.ws, filepath.FromSlash(p)), "n")
				}
				write(t, filepath.Join(e.ws, "sub", "kept.txt"), "n")
				write(t, filepath.Join(e.ws, "my.mcp", "kept.txt"), "n")
				write(t, filepath.Join(e.ws, "sub", ".mcpx"), "a file named like a folder is kept")
			},
			want: []string{"my.mcp/kept.txt", "sub/.mcpx", "sub/kept.txt"}},
		{name: "folders and symlinks not listed", before: []string{"a.txt"},
			act: func(t *testing.T, e env) {
				symlink(t, filepath.Join(e.ws, "a.txt"), filepath.Join(e.ws, "link.txt"))
				if err := os.MkdirAll(filepath.Join(e.ws, "emptydir", "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "symlink to outside not followed", before: []string{"a.txt"},
			setup: func(t *testing.T, e env) {
				symlink(t, e.outside, filepath.Join(e.ws, "out"))
			},
			act: func(t *testing.T, e env) {
				write(t, filepath.Join(e.ws, "out", "through.txt"), "n")
				symlink(t, e.outside, filepath.Join(e.ws, "out2"))
				write(t, filepath.Join(e.ws, "out2", "through2.txt"), "n")
			}},
		{name: "folder moved in", before: []string{"a.txt"},
			setup: func(t *testing.T, e env) {
				write(t, filepath.Join(e.outside, "pkg", "lib", "x.go"), "n")
				write(t, filepath.Join(e.outside, "pkg", "y.go"), "n")
				write(t, filepath.Join(e.outside, "pkg", "node_modules", "z.js"), "n")
				write(t, filepath.Join(e.outside, "single.txt"), "n")
			},
			act: func(t *testing.T, e env) {
				rename(t, filepath.Join(e.outside, "pkg"), filepath.Join(e.ws, "pkg"))
				rename(t, filepath.Join(e.outside, "single.txt"), filepath.Join(e.ws, "single.txt"))
			},
			want: []string{"pkg/lib/x.go", "pkg/y.go", "single.txt"}},
		{name: "folder renamed inside", before: []string{"d/a.txt", "d/e/b.txt", "keep.txt"},
			act: func(t *testing.T, e env) {
				rename(t, filepath.Join(e.ws, "d"), filepath.Join(e.ws, "moved"))
			},
			want: []string{"moved/a.txt", "moved/e/b.txt"}},
		{name: "folder renamed before the call keeps being watched", before: []string{"d/e/b.txt"},
			setup: func(t *testing.T, e env) {
				rename(t, filepath.Join(e.ws, "d"), filepath.Join(e.ws, "moved"))
			},
			act: func(t *testing.T, e env) {
				write(t, filepath.Join(e.ws, "moved", "e", "b.txt"), "changed")
			},
			want: []string{"moved/e/b.txt"}},
		{name: "folder moved out is not watched under its old name", before: []string{"d/a.txt"},
			setup: func(t *testing.T, e env) {
				rename(t, filepath.Join(e.ws, "d"), filepath.Join(e.outside, "d"))
				write(t, filepath.Join(e.ws, "d", "a.txt"), "a new d")
			},
			act: func(t *testing.T, e env) {
				write(t, filepath.Join(e.outside, "d", "a.txt"), "written outside")
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, f := range tc.before {
				p := write(t, filepath.Join(e.ws, filepath.FromSlash(f)), "x")
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}
			w := virtualpath.NewWatcher()
			release := w.Acquire(e.ws)
			defer release()
			if want := wantMode(); w.Mode(e.ws) != want {
				t.Fatalf("mode %q, want %q", w.Mode(e.ws), want)
			}
			if tc.setup != nil {
				tc.setup(t, e)
			}
			got := call(t, w, e, func() { tc.act(t, e) })
			if want := virtual(tc.want...); !slices.Equal(got, want) {
				t.Fatalf("changed = %q\nwant %q", got, want)
			}
			// The next call starts clean.
			if got := call(t, w, e, func() {}); got != nil {
				t.Fatalf("the next call lists %q", got)
			}
		})
	}
}

// A workspace that does not exist yet is walked, and watched once it does.
func TestCallMissingWorkspace(t *testing.T) {
	e := newEnv(t)
	e.ws = filepath.Join(e.root, "later")
	w := virtualpath.NewWatcher()
	defer w.Acquire(e.ws)()
	got := call(t, w, e, func() { write(t, filepath.Join(e.ws, "a.txt"), "x") })
	if want := []string{virtualpath.Prefix + "/later/a.txt"}; !slices.Equal(got, want) {
		t.Fatalf("changed = %q, want %q", got, want)
	}
	got = call(t, w, e, func() { write(t, filepath.Join(e.ws, "b.txt"), "x") })
	if want := []string{virtualpath.Prefix + "/later/b.txt"}; !slices.Equal(got, want) {
		t.Fatalf("changed = %q, want %q", got, want)
	}
}

// Calls in two workspaces of one watcher each list only their own files.
func TestCallTwoWorkspaces(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	w := virtualpath.NewWatcher()
	defer w.Acquire(a.ws)()
	defer w.Acquire(b.ws)()
	ca := w.Begin(a.root, a.ws, a.ws)
	cb := w.Begin(b.root, b.ws, b.ws)
	write(t, filepath.Join(a.ws, "a.txt"), "a")
	write(t, filepath.Join(b.ws, "b.txt"), "b")
	write(t, filepath.Join(b.ws, "d", "b2.txt"), "b")
	gotB := changedOf(t, cb.Rewrite(textResult("done")))
	gotA := changedOf(t, ca.Rewrite(textResult("done")))
	ca.End()
	cb.End()
	if !slices.Equal(gotA, virtual("a.txt")) || !slices.Equal(gotB, virtual("b.txt", "d/b2.txt")) {
		t.Fatalf("A lists %q, B lists %q", gotA, gotB)
	}
}

// wantMode is how a workspace is tracked here.
func wantMode() string {
	if runtime.GOOS == "linux" {
		return "watch"
	}
	return "walk"
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}
