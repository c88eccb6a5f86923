package virtualpath_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

func TestChanged(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	tests := []struct {
		name   string
		before []string                      // files present before the call
		act    func(t *testing.T, ws string) // what the call did
		want   []string                      // changed, relative to ws
	}{
		{name: "nothing", before: []string{"a.txt"}, act: func(t *testing.T, ws string) {}},
		{name: "created", before: []string{"a.txt"},
			act: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, "new.txt"), "n")
				write(t, filepath.Join(ws, "d", "e", "deep.txt"), "n")
			},
			want: []string{"d/e/deep.txt", "new.txt"}},
		{name: "modified size", before: []string{"a.txt", "b.txt"},
			act: func(t *testing.T, ws string) {
				p := write(t, filepath.Join(ws, "a.txt"), "longer content")
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"a.txt"}},
		{name: "modified mtime same size", before: []string{"a.txt", "b.txt"},
			act: func(t *testing.T, ws string) {
				later := old.Add(time.Minute)
				if err := os.Chtimes(filepath.Join(ws, "b.txt"), later, later); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"b.txt"}},
		{name: "deleted not reported", before: []string{"a.txt", "b.txt"},
			act: func(t *testing.T, ws string) {
				if err := os.Remove(filepath.Join(ws, "a.txt")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "excluded folders at any depth", before: []string{"a.txt"},
			act: func(t *testing.T, ws string) {
				for _, p := range []string{
					".mcp/tmp/x", ".git/HEAD", "node_modules/m/index.js",
					"sub/.mcp/y", "sub/deep/.git/objects/o", "pkg/node_modules/z.js",
					"p/__pycache__/m.pyc", ".venv/bin/python", "x/.cache/c",
					".hg/h", ".svn/s", ".next/n", ".browser-frames/f", ".tool-results/r",
				} {
					write(t, filepath.Join(ws, filepath.FromSlash(p)), "n")
				}
				write(t, filepath.Join(ws, "sub", "kept.txt"), "n")
				write(t, filepath.Join(ws, "my.mcp", "kept.txt"), "n")
				write(t, filepath.Join(ws, ".mcpx", "kept.txt"), "n")
				write(t, filepath.Join(ws, "sub", ".git"), "a file named .git is kept")
			},
			want: []string{".mcpx/kept.txt", "my.mcp/kept.txt", "sub/.git", "sub/kept.txt"}},
		{name: "symlinks not reported", before: []string{"a.txt"},
			act: func(t *testing.T, ws string) {
				symlink(t, filepath.Join(ws, "a.txt"), filepath.Join(ws, "link.txt"))
			}},
		{name: "directories not reported", before: []string{"a.txt"},
			act: func(t *testing.T, ws string) {
				if err := os.MkdirAll(filepath.Join(ws, "emptydir", "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "replaced by same content keeps no change", before: []string{"a.txt"},
			act: func(t *testing.T, ws string) {
				p := write(t, filepath.Join(ws, "a.txt"), "x")
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, f := range tc.before {
				p := write(t, filepath.Join(e.ws, f), "x")
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}
			// Files already in excluded folders stay unreported too.
			write(t, filepath.Join(e.ws, ".mcp", "tmp", "pre"), "x")
			snap := virtualpath.Scan(e.ws)
			if snap == nil {
				t.Fatal("Scan returned nil")
			}
			tc.act(t, e.ws)
			got := virtualpath.Changed(e.ws, snap)
			var want []string
			for _, w := range tc.want {
				want = append(want, filepath.Join(e.ws, filepath.FromSlash(w)))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Changed = %q\nwant %q", got, want)
			}
		})
	}
}

func TestScan(t *testing.T) {
	e := newEnv(t)
	a := write(t, filepath.Join(e.ws, "a.txt"), "hello")
	write(t, filepath.Join(e.ws, ".mcp", "tmp", "t"), "x")
	write(t, filepath.Join(e.ws, "n", "node_modules", "m.js"), "x")
	snap := virtualpath.Scan(e.ws)
	if len(snap) != 1 {
		t.Fatalf("Scan = %v, want only %s", snap, a)
	}
	info, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	if st := snap[a]; st.Size != 5 || st.ModTime != info.ModTime().UnixNano() {
		t.Fatalf("stamp = %+v", st)
	}
}

// The workspace folder itself may be named like an excluded folder.
func TestScanExcludedNameRoot(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.ws, ".mcp")
	p := write(t, filepath.Join(dir, "a.txt"), "x")
	if snap := virtualpath.Scan(dir); len(snap) != 1 || snap[p] == (virtualpath.Stamp{}) {
		t.Fatalf("Scan = %v", snap)
	}
}

func TestScanMissingDir(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.tmp, "missing")
	snap := virtualpath.Scan(dir)
	if len(snap) != 0 {
		t.Fatalf("Scan = %v", snap)
	}
	write(t, filepath.Join(dir, "a.txt"), "x")
	if got := virtualpath.Changed(dir, snap); len(got) != 1 {
		t.Fatalf("Changed = %q", got)
	}
}

func TestChangedNilScan(t *testing.T) {
	e := newEnv(t)
	write(t, filepath.Join(e.ws, "a.txt"), "x")
	if got := virtualpath.Changed(e.ws, nil); got != nil {
		t.Fatalf("Changed(nil) = %q, want nil", got)
	}
}

// A workspace with more than 20000 files is not tracked: Scan returns nil
// and Changed then reports nothing.
func TestScanTooManyFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 20001 files")
	}
	e := newEnv(t)
	for i := range 20001 {
		d := filepath.Join(e.ws, "d"+strconv.Itoa(i%100))
		if i < 100 {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if snap := virtualpath.Scan(e.ws); snap != nil {
		t.Fatalf("Scan has %d files, want nil", len(snap))
	}
	// Files in excluded folders do not count.
	if err := os.Rename(filepath.Join(e.ws, "d0"), filepath.Join(e.ws, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if snap := virtualpath.Scan(e.ws); len(snap) != 20001-201 {
		t.Fatalf("Scan has %d files, want %d", len(snap), 20001-201)
	}
}

// Folders count towards the bound too: a tree of empty folders, which an
// agent can make with one tool call after another, is not walked past it.
func TestScanTooManyFolders(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 20001 folders")
	}
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.ws, "a.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 20001 {
		if err := os.Mkdir(filepath.Join(e.ws, "d"+strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if snap := virtualpath.Scan(e.ws); snap != nil {
		t.Fatalf("Scan has %d files, want nil", len(snap))
	}
}
