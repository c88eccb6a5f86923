package configfile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestWriteAtomic: content lands, an existing file keeps its mode, a new file
// is 0o600 with its parent directories created, and no temp file remains.
func TestWriteAtomic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		existing *os.FileMode // nil: the file does not exist yet
		subdir   string       // created by the write when non-empty
		want     os.FileMode
	}{
		{name: "new file is 0o600", want: 0o600},
		{name: "new file in missing directories", subdir: "a/b", want: 0o600},
		{name: "0o640 stays 0o640", existing: ptr(os.FileMode(0o640)), want: 0o640},
		{name: "0o644 stays 0o644", existing: ptr(os.FileMode(0o644)), want: 0o644},
		{name: "0o600 stays 0o600", existing: ptr(os.FileMode(0o600)), want: 0o600},
		{name: "0o400 stays 0o400", existing: ptr(os.FileMode(0o400)), want: 0o400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tt.subdir)
			path := filepath.Join(dir, "extensions_config.json")
			if tt.existing != nil {
				writeFile(t, path, `{"old": true}`, *tt.existing)
			}
			if err := WriteAtomic(path, []byte(`{"new": true}`), nil); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != `{"new": true}` {
				t.Errorf("content = %q", got)
			}
			if got := fileMode(t, path); got != tt.want {
				t.Errorf("mode = %o, want %o", got, tt.want)
			}
			assertNoTemps(t, dir)
		})
	}
}

// TestWriteAtomicSymlink: a symlinked config stays a symlink (with the same
// link text) and its final target gets the content and keeps its mode; a
// dangling link creates its target. Relative links are read against the real
// directory of the link, as the kernel does.
func TestWriteAtomicSymlink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup builds the layout under root and returns the configured path
		// and the file the content must land in.
		setup func(t *testing.T, root string) (configured, target string)
	}{
		{name: "absolute link", setup: func(t *testing.T, root string) (string, string) {
			target := filepath.Join(root, "real", "config.json")
			mkdir(t, filepath.Dir(target))
			writeFile(t, target, "old", 0o640)
			link := filepath.Join(root, "extensions_config.json")
			symlink(t, target, link)
			return link, target
		}},
		{name: "relative link", setup: func(t *testing.T, root string) (string, string) {
			target := filepath.Join(root, "real", "config.json")
			mkdir(t, filepath.Dir(target))
			writeFile(t, target, "old", 0o640)
			link := filepath.Join(root, "extensions_config.json")
			symlink(t, "real/config.json", link)
			return link, target
		}},
		{name: "chain of links", setup: func(t *testing.T, root string) (string, string) {
			target := filepath.Join(root, "real", "config.json")
			mkdir(t, filepath.Dir(target))
			writeFile(t, target, "old", 0o640)
			symlink(t, "real/config.json", filepath.Join(root, "middle.json"))
			link := filepath.Join(root, "extensions_config.json")
			symlink(t, filepath.Join(root, "middle.json"), link)
			return link, target
		}},
		{name: "relative link inside a symlinked directory", setup: func(t *testing.T, root string) (string, string) {
			// root/conf -> root/x/y; root/x/y/extensions_config.json -> ../config.json
			// names root/x/config.json, not root/config.json.
			mkdir(t, filepath.Join(root, "x", "y"))
			symlink(t, filepath.Join(root, "x", "y"), filepath.Join(root, "conf"))
			target := filepath.Join(root, "x", "config.json")
			writeFile(t, target, "old", 0o640)
			symlink(t, "../config.json", filepath.Join(root, "x", "y", "extensions_config.json"))
			return filepath.Join(root, "conf", "extensions_config.json"), target
		}},
		{name: "dangling link creates its target", setup: func(t *testing.T, root string) (string, string) {
			link := filepath.Join(root, "extensions_config.json")
			symlink(t, "real/config.json", link)
			return link, filepath.Join(root, "real", "config.json")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			configured, target := tt.setup(t, root)
			linkText, err := os.Readlink(configured)
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(target)
			wantMode := os.FileMode(0o640)
			if statErr != nil {
				wantMode = 0o600
			}

			if err := WriteAtomic(configured, []byte("new"), nil); err != nil {
				t.Fatal(err)
			}
			st, err := os.Lstat(configured)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("%s is no longer a symlink (mode %v)", configured, st.Mode())
			}
			if got, _ := os.Readlink(configured); got != linkText {
				t.Errorf("link text = %q, want %q", got, linkText)
			}
			if got := readFile(t, target); got != "new" {
				t.Errorf("target content = %q", got)
			}
			if got := fileMode(t, target); got != wantMode {
				t.Errorf("target mode = %o, want %o", got, wantMode)
			}
			assertNoTemps(t, filepath.Dir(target))
			assertNoTemps(t, filepath.Dir(configured))
		})
	}
}

// TestWriteAtomicFaults injects failures into the write (fault injection
// through the fsOps seam): the old content and mode survive and no temp file
// remains.
func TestWriteAtomicFaults(t *testing.T) {
	t.Parallel()
	errInjected := errors.New("injected fault")
	tests := []struct {
		name   string
		inject func(*fsOps)
	}{
		{name: "temp write fails", inject: func(o *fsOps) {
			o.writeTemp = func(*os.File, []byte) error { return errInjected }
		}},
		{name: "temp write fails after writing part", inject: func(o *fsOps) {
			o.writeTemp = func(f *os.File, data []byte) error {
				if _, err := f.Write(data[:len(data)/2]); err != nil {
					return err
				}
				return errInjected
			}
		}},
		{name: "rename fails", inject: func(o *fsOps) {
			o.rename = func(oldpath, newpath string) error {
				return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: errInjected}
			}
		}},
		{name: "rename fails with EXDEV", inject: func(o *fsOps) {
			o.rename = func(oldpath, newpath string) error {
				return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EXDEV}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "extensions_config.json")
			writeFile(t, path, `{"old": true}`, 0o640)
			ops := osOps()
			tt.inject(&ops)

			err := writeAtomic(path, []byte(`{"new": true}`), slog.New(slog.DiscardHandler), ops)
			if err == nil {
				t.Fatal("write succeeded despite the injected fault")
			}
			if !errors.Is(err, errInjected) && !errors.Is(err, syscall.EXDEV) {
				t.Errorf("error %v does not wrap the injected fault", err)
			}
			if got := readFile(t, path); got != `{"old": true}` {
				t.Errorf("old content lost: %q", got)
			}
			if got := fileMode(t, path); got != 0o640 {
				t.Errorf("mode = %o", got)
			}
			assertNoTemps(t, dir)

			// The same fault through File.Update: error returned, after not
			// called, nothing changed.
			f := New(path, nil)
			f.ops = ops
			called := false
			err = f.Update(context.Background(), func([]byte, bool) ([]byte, error) {
				return []byte(`{"new": true}`), nil
			}, func() { called = true })
			if err == nil || called {
				t.Errorf("Update: err=%v after called=%v", err, called)
			}
			if got := readFile(t, path); got != `{"old": true}` {
				t.Errorf("old content lost after Update: %q", got)
			}
			assertNoTemps(t, dir)
		})
	}
}

// TestBindMountFallback simulates a bind-mount point — fault injection: the
// rename seam returns EBUSY, which a test cannot provoke for real without
// root. The data is written in place (same inode), no temp file remains, and
// DeerFlow's warning is logged once per target, later occurrences at debug.
func TestBindMountFallback(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "extensions_config.json")
	writeFile(t, path, `{"n": 0}`, 0o640)
	other := filepath.Join(dir, "other.json")
	writeFile(t, other, `{}`, 0o600)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	rec := &recorder{}
	ebusy := func(o *fsOps) {
		o.rename = func(oldpath, newpath string) error {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EBUSY}
		}
	}
	f := New(path, slog.New(rec))
	ebusy(&f.ops)
	g := New(other, slog.New(rec))
	ebusy(&g.ops)

	for i := 1; i <= 3; i++ {
		want := fmt.Sprintf(`{"n": %d}`, i)
		if err := f.Update(context.Background(), func([]byte, bool) ([]byte, error) {
			return []byte(want), nil
		}, nil); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if got := readFile(t, path); got != want {
			t.Errorf("update %d: content = %q", i, got)
		}
	}
	if err := g.Update(context.Background(), func([]byte, bool) ([]byte, error) { return []byte(`{"x": 1}`), nil }, nil); err != nil {
		t.Fatal(err)
	}

	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the file was replaced, not overwritten in place")
	}
	if got := fileMode(t, path); got != 0o640 {
		t.Errorf("mode = %o", got)
	}
	assertNoTemps(t, dir)

	msg := func(p string) string {
		return "Cannot atomically replace " + p + " (it is a bind-mount point); overwriting in place. A crash during this write can leave the file truncated."
	}
	wantWarn := []string{msg(path), msg(other)}
	if got := rec.messages(slog.LevelWarn); !slices.Equal(got, wantWarn) {
		t.Errorf("warnings = %q, want %q", got, wantWarn)
	}
	if got := rec.messages(slog.LevelDebug); !slices.Equal(got, []string{msg(path), msg(path)}) {
		t.Errorf("debug messages = %q, want the same text twice for %s", got, path)
	}
}

func ptr[T any](v T) *T { return &v }

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, oldname, newname string) {
	t.Helper()
	if err := os.Symlink(oldname, newname); err != nil {
		t.Fatal(err)
	}
}
