package configfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestUpdate covers fn's three outcomes: an error writes nothing and comes
// back as is, nil data writes nothing, data is written and after runs once.
func TestUpdate(t *testing.T) {
	t.Parallel()
	errRejected := &rejectedError{field: "mcpServers.x"}
	tests := []struct {
		name        string
		existing    *string // nil: the file is missing
		fnData      []byte
		fnErr       error
		wantCurrent []byte // what fn must be given
		wantExists  bool
		wantContent *string // nil: the file must still be missing
		wantAfter   bool
	}{
		{name: "missing file: nil data, exists=false; new file written",
			fnData: []byte(`{"a":1}`), wantContent: ptr(`{"a":1}`), wantAfter: true},
		{name: "existing file: bytes given, replaced",
			existing: ptr(`{"a":1}`), wantCurrent: []byte(`{"a":1}`), wantExists: true,
			fnData: []byte(`{"a":2}`), wantContent: ptr(`{"a":2}`), wantAfter: true},
		{name: "empty existing file: empty, exists=true",
			existing: ptr(``), wantCurrent: []byte{}, wantExists: true,
			fnData: []byte(`{}`), wantContent: ptr(`{}`), wantAfter: true},
		{name: "nil data is no change",
			existing: ptr(`{"a":1}`), wantCurrent: []byte(`{"a":1}`), wantExists: true,
			wantContent: ptr(`{"a":1}`)},
		{name: "nil data on a missing file creates nothing"},
		{name: "fn error writes nothing",
			existing: ptr(`{"a":1}`), wantCurrent: []byte(`{"a":1}`), wantExists: true,
			fnData: []byte(`{"a":2}`), fnErr: errRejected, wantContent: ptr(`{"a":1}`)},
		{name: "fn error on a missing file creates nothing",
			fnErr: errRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "extensions_config.json")
			if tt.existing != nil {
				writeFile(t, path, *tt.existing, 0o644)
			}
			f := New(path, nil)
			afterCalls := 0
			err := f.Update(context.Background(), func(current []byte, exists bool) ([]byte, error) {
				if string(current) != string(tt.wantCurrent) || (current == nil) != (tt.wantCurrent == nil) || exists != tt.wantExists {
					t.Errorf("fn got (%q, nil=%v, %v), want (%q, nil=%v, %v)",
						current, current == nil, exists, tt.wantCurrent, tt.wantCurrent == nil, tt.wantExists)
				}
				return tt.fnData, tt.fnErr
			}, func() { afterCalls++ })

			if tt.fnErr != nil {
				var re *rejectedError
				if !errors.Is(err, tt.fnErr) || !errors.As(err, &re) || re.field != "mcpServers.x" {
					t.Errorf("err = %v, want fn's error intact", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			wantAfter := 0
			if tt.wantAfter {
				wantAfter = 1
			}
			if afterCalls != wantAfter {
				t.Errorf("after called %d times, want %d", afterCalls, wantAfter)
			}
			got, rerr := os.ReadFile(path)
			switch {
			case tt.wantContent == nil && !errors.Is(rerr, fs.ErrNotExist):
				t.Errorf("file exists (%q, %v), want missing", got, rerr)
			case tt.wantContent != nil && string(got) != *tt.wantContent:
				t.Errorf("content = %q, want %q", got, *tt.wantContent)
			}
			assertNoTemps(t, dir)
		})
	}
}

type rejectedError struct{ field string }

func (e *rejectedError) Error() string { return "invalid " + e.field }

// TestUpdateCreatesFile: a missing config (and its directories) is created
// with mode 0o600, and the sidecar lock file sits beside it.
func TestUpdateCreatesFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "conf", "d")
	path := filepath.Join(dir, "extensions_config.json")
	f := New(path, nil)
	if f.Path() != path {
		t.Errorf("Path() = %q", f.Path())
	}
	if err := f.Update(context.Background(), func(_ []byte, exists bool) ([]byte, error) {
		if exists {
			t.Error("exists = true for a missing file")
		}
		return []byte(`{"mcpServers": {}}`), nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if got := fileMode(t, path); got != 0o600 {
		t.Errorf("mode = %o, want 600", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".extensions_config.json.lock")); err != nil {
		t.Errorf("sidecar lock file: %v", err)
	}
	data, exists, err := f.Read(context.Background())
	if err != nil || !exists || string(data) != `{"mcpServers": {}}` {
		t.Errorf("Read = %q, %v, %v", data, exists, err)
	}
}

// TestReadMissing: Read of a missing file is nil, false and no error.
func TestReadMissing(t *testing.T) {
	t.Parallel()
	f := New(filepath.Join(t.TempDir(), "extensions_config.json"), nil)
	data, exists, err := f.Read(context.Background())
	if data != nil || exists || err != nil {
		t.Errorf("Read = %q, %v, %v", data, exists, err)
	}
}

// TestReadMaxSize: with WithMaxSize, a file above the size is refused with
// ErrTooLarge and never returned; one at the size reads whole.
func TestReadMaxSize(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	f := New(path, nil).WithMaxSize(16)
	for _, tc := range []struct {
		content string
		tooBig  bool
	}{
		{`{"mcpServers":{}}`[:16], false},
		{`{"mcpServers": {}}`, true},
	} {
		writeFile(t, path, tc.content, 0o600)
		data, exists, err := f.Read(context.Background())
		switch {
		case tc.tooBig && (!errors.Is(err, ErrTooLarge) || data != nil || !exists):
			t.Errorf("%d bytes: Read = %q, %v, %v; want ErrTooLarge", len(tc.content), data, exists, err)
		case !tc.tooBig && (err != nil || string(data) != tc.content):
			t.Errorf("%d bytes: Read = %q, %v; want the file", len(tc.content), data, err)
		}
	}
}

// TestLocksHeldThroughCycle: both the in-process mutex and the sidecar flock
// are held while fn and after run, and released afterwards. For a symlinked
// config the sidecar sits beside the link's target.
func TestLocksHeldThroughCycle(t *testing.T) {
	t.Parallel()
	for _, linked := range []bool{false, true} {
		t.Run(fmt.Sprintf("symlink=%v", linked), func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "extensions_config.json")
			sidecar := filepath.Join(root, ".extensions_config.json.lock")
			if linked {
				mkdir(t, filepath.Join(root, "real"))
				writeFile(t, filepath.Join(root, "real", "target.json"), `{}`, 0o600)
				symlink(t, "real/target.json", path)
				sidecar = filepath.Join(root, "real", ".target.json.lock")
			}
			f := New(path, nil)
			other := New(path, nil) // a second File for the same path
			probe := func(stage string) {
				if !sidecarHeld(t, sidecar) {
					t.Errorf("%s: sidecar flock not held", stage)
				}
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if _, _, err := other.Read(ctx); !errors.Is(err, context.Canceled) {
					t.Errorf("%s: other File's Read = %v, want context.Canceled", stage, err)
				}
			}
			err := f.Update(context.Background(), func([]byte, bool) ([]byte, error) {
				probe("fn")
				return []byte(`{"x": 1}`), nil
			}, func() { probe("after") })
			if err != nil {
				t.Fatal(err)
			}
			if sidecarHeld(t, sidecar) {
				t.Error("sidecar flock still held after Update")
			}
			if _, _, err := other.Read(context.Background()); err != nil {
				t.Errorf("Read after Update: %v", err)
			}
		})
	}
}

// TestSamePathSharedInProcess: goroutines using two File values for one path
// (and a third File reaching it through a symlink) lose no increment.
func TestSamePathSharedInProcess(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := filepath.Join(root, "extensions_config.json")
	writeFile(t, path, `{"n": 0}`, 0o600)
	link := filepath.Join(root, "link.json")
	symlink(t, "extensions_config.json", link)
	files := []*File{New(path, nil), New(path, nil), New(link, nil)}

	const workers, each = 6, 30
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			f := files[w%len(files)]
			for range each {
				if err := f.Update(context.Background(), increment, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := counter(t, []byte(readFile(t, path))); n != workers*each {
		t.Errorf("n = %d, want %d", n, workers*each)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link is no longer a symlink: %v", err)
	}
}

// TestContextWhileHeldInProcess: while one goroutine holds the locks, Update
// and Read with a done context return its error and write nothing.
func TestContextWhileHeldInProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	writeFile(t, path, `{"n": 0}`, 0o600)
	holder := New(path, nil)
	waiter := New(path, nil)

	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- holder.Update(context.Background(), func([]byte, bool) ([]byte, error) {
			close(held)
			<-release
			return nil, nil
		}, nil)
	}()
	<-held

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	deadline, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	tests := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"already cancelled", cancelled, context.Canceled},
		{"deadline passes while waiting", deadline, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		for _, f := range []*File{holder, waiter} {
			called := false
			err := f.Update(tt.ctx, func([]byte, bool) ([]byte, error) {
				called = true
				return []byte(`{"n": 99}`), nil
			}, nil)
			if !errors.Is(err, tt.want) || called {
				t.Errorf("%s: Update = %v (fn called %v), want %v", tt.name, err, called, tt.want)
			}
			if _, _, err := f.Read(tt.ctx); !errors.Is(err, tt.want) {
				t.Errorf("%s: Read = %v, want %v", tt.name, err, tt.want)
			}
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != `{"n": 0}` {
		t.Errorf("content = %q", got)
	}
	// A cancelled context is refused even when nothing holds the locks.
	if err := waiter.Update(cancelled, increment, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Update with a cancelled context on a free file = %v", err)
	}
	if got := readFile(t, path); got != `{"n": 0}` {
		t.Errorf("content = %q", got)
	}
}

// TestStaleTempsRemoved: Update removes ".<name>.*.tmp" files older than a
// minute beside the target before writing, and leaves fresh ones (a writer
// that does not take the lock may still own them) and other files' temps.
func TestStaleTempsRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "extensions_config.json")
	writeFile(t, path, `{"n": 0}`, 0o600)
	old := time.Now().Add(-2 * time.Minute)
	stale := filepath.Join(dir, ".extensions_config.json.123abc.tmp")
	fresh := filepath.Join(dir, ".extensions_config.json.456def.tmp")
	otherStale := filepath.Join(dir, ".other.json.789.tmp")
	noRandom := filepath.Join(dir, ".extensions_config.json..tmp") // no random part: not a temp name, kept
	for _, p := range []string{stale, fresh, otherStale, noRandom} {
		writeFile(t, p, "partial", 0o600)
	}
	for _, p := range []string{stale, otherStale, noRandom} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}

	f := New(path, nil)
	// Reading and a no-change Update do not clean up; only a write does.
	if err := f.Update(context.Background(), func([]byte, bool) ([]byte, error) { return nil, nil }, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("stale temp removed by a no-change Update: %v", err)
	}
	if err := f.Update(context.Background(), increment, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{noRandom, fresh, otherStale}
	if got := tempFiles(t, dir); !slices.Equal(got, want) {
		t.Errorf("temp files = %v, want %v", got, want)
	}
}

// increment is the read-modify-write step of the counter tests: {"n": k} → {"n": k+1}.
func increment(current []byte, exists bool) ([]byte, error) {
	var doc struct {
		N int `json:"n"`
	}
	if exists {
		if err := json.Unmarshal(current, &doc); err != nil {
			return nil, fmt.Errorf("counter file is not valid JSON: %w", err)
		}
	}
	doc.N++
	return json.Marshal(doc)
}

func counter(t *testing.T, data []byte) int {
	t.Helper()
	var doc struct {
		N int `json:"n"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("counter file %q is not valid JSON: %v", data, err)
	}
	return doc.N
}

// Read creates nothing: a config in a folder the host may not write (a
// mounted ConfigMap) reads without a lock file, and reading a missing file
// creates no folder.
func TestReadCreatesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data, exists, err := New(path, nil).Read(context.Background())
	if err != nil || !exists || string(data) != `{"mcpServers": {}}` {
		t.Fatalf("Read = %q, %v, %v", data, exists, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".extensions_config.json.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read created the lock file: %v", err)
	}
	missing := filepath.Join(dir, "absent", "extensions_config.json")
	if _, exists, err := New(missing, nil).Read(context.Background()); err != nil || exists {
		t.Fatalf("Read of a missing file = %v, %v", exists, err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read created the folder: %v", err)
	}
}
