package configfile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The multi-process tests re-execute this test binary as a child running
// TestHelperProcess, which acts according to these variables.
const (
	helperModeEnv = "ANTLER_CONFIGFILE_HELPER"
	helperPathEnv = "ANTLER_CONFIGFILE_HELPER_PATH"
)

// incrementsPerProcess is how many read-modify-write increments each child of
// TestTwoProcessesNoLostUpdate performs.
const incrementsPerProcess = 200

// TestHelperProcess is not a test: it is the child process of the
// multi-process tests and does nothing unless helperModeEnv is set. Modes:
//
//   - alternate: replace the file with bigDoc("A") or bigDoc("B") (whichever
//     it does not hold) in a tight loop through File.Update, printing "ready"
//     after the first write; runs until killed.
//   - increment: wait for one byte on stdin (the start signal), then do
//     incrementsPerProcess counter increments through File.Update.
//   - hold: take the locks through File.Update, print "locked", and keep them
//     until stdin is closed; writes nothing.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		return
	}
	f := New(os.Getenv(helperPathEnv), nil)
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	switch mode {
	case "alternate":
		a, b := bigDoc("A"), bigDoc("B")
		for i := 0; ; i++ {
			err := f.Update(ctx, func(current []byte, _ bool) ([]byte, error) {
				if bytes.Equal(current, a) {
					return b, nil
				}
				return a, nil
			}, nil)
			if err != nil {
				fail(err)
			}
			if i == 0 {
				fmt.Println("ready")
			}
		}
	case "increment":
		if _, err := os.Stdin.Read(make([]byte, 1)); err != nil {
			fail(err)
		}
		for range incrementsPerProcess {
			if err := f.Update(ctx, increment, nil); err != nil {
				fail(err)
			}
		}
	case "hold":
		err := f.Update(ctx, func([]byte, bool) ([]byte, error) {
			fmt.Println("locked")
			_, err := io.Copy(io.Discard, os.Stdin)
			return nil, err
		}, nil)
		if err != nil {
			fail(err)
		}
	default:
		fail(fmt.Errorf("unknown mode %q", mode))
	}
	os.Exit(0)
}

// child is a running helper process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bytes.Buffer
}

func startHelper(t *testing.T, mode, path string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperPathEnv+"="+path)
	c := &child{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdout = bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}

// await reads stdout lines until one equals line.
func (c *child) await(t *testing.T, line string) {
	t.Helper()
	for {
		got, err := c.stdout.ReadString('\n')
		if strings.TrimSpace(got) == line {
			return
		}
		if err != nil {
			_ = c.cmd.Wait()
			t.Fatalf("helper exited before printing %q: %v; stderr: %s", line, err, c.stderr)
		}
	}
}

// bigDoc is a valid JSON document of about 1 MiB whose every byte depends on
// tag, so a mix of two documents equals neither.
func bigDoc(tag string) []byte {
	items := make([]string, 1024)
	for i := range items {
		items[i] = fmt.Sprintf("%s-%04d-%s", tag, i, strings.Repeat(tag, 1000))
	}
	b, err := json.MarshalIndent(map[string]any{"doc": tag, "items": items}, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// TestKillDuringWrites SIGKILLs a child that rewrites a ~1 MiB file in a tight
// loop, at a random moment, 20 times: after every kill the file is exactly
// one of the two documents and valid JSON, never partial or missing. Temp
// files of killed writers may remain (logged); the next Update still works,
// and once they are older than a minute an Update removes them.
func TestKillDuringWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "extensions_config.json")
	a, b := bigDoc("A"), bigDoc("B")
	if err := WriteAtomic(path, a, nil); err != nil {
		t.Fatal(err)
	}

	const kills = 20
	var sawA, sawB, leftovers int
	for i := range kills {
		c := startHelper(t, "alternate", path)
		c.await(t, "ready")
		time.Sleep(rand.N(40 * time.Millisecond)) // a random moment of the helper's writes: when the kill lands is what varies
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := c.cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: helper did not die of SIGKILL: %v; stderr: %s", i, err, c.stderr)
		}

		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		switch {
		case bytes.Equal(got, a):
			sawA++
		case bytes.Equal(got, b):
			sawB++
		default:
			t.Fatalf("kill %d: file is neither document (%d bytes, valid JSON %v)", i, len(got), json.Valid(got))
		}
		if !json.Valid(got) {
			t.Fatalf("kill %d: file is not valid JSON", i)
		}
		leftovers = len(tempFiles(t, dir))
	}
	t.Logf("after %d kills: file held A %d times, B %d times; %d temp files left by killed writers", kills, sawA, sawB, leftovers)

	// Leftovers do not disturb the next writer; once stale they are removed.
	f := New(path, nil)
	swap := func(current []byte, _ bool) ([]byte, error) {
		if bytes.Equal(current, a) {
			return b, nil
		}
		return a, nil
	}
	before := readFile(t, path)
	if err := f.Update(context.Background(), swap, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got == before || (got != string(a) && got != string(b)) {
		t.Error("Update after the kills did not swap the document")
	}
	old := time.Now().Add(-2 * staleTempAge)
	for _, p := range tempFiles(t, dir) {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Update(context.Background(), swap, nil); err != nil {
		t.Fatal(err)
	}
	assertNoTemps(t, dir)
	if got := readFile(t, path); got != before {
		t.Error("second Update did not swap back")
	}
}

// TestTwoProcessesNoLostUpdate: two child processes each do 200
// read-modify-write increments at once; none is lost (n == 400), and a reader
// loop in this process, reading without any lock, always finds the file
// present, valid JSON and never going backwards. No temp file remains.
func TestTwoProcessesNoLostUpdate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "extensions_config.json")
	writeFile(t, path, `{"n": 0}`, 0o600)

	children := []*child{startHelper(t, "increment", path), startHelper(t, "increment", path)}
	for _, c := range children { // start both at once
		if _, err := c.stdin.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	exited := make(chan error, len(children))
	for _, c := range children {
		go func() {
			err := c.cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w; stderr: %s", err, c.stderr)
			}
			exited <- err
		}()
	}

	f := New(path, nil)
	last, observations, running := 0, 0, len(children)
	for running > 0 {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("child: %v", err)
			}
			running--
			continue
		default:
		}
		var data []byte
		var err error
		if observations%8 == 7 { // now and then the way GET reads: under the locks
			var exists bool
			data, exists, err = f.Read(context.Background())
			if err == nil && !exists {
				err = errors.New("file missing")
			}
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			t.Fatalf("observation %d: %v", observations, err)
		}
		if !json.Valid(data) {
			t.Fatalf("observation %d: invalid JSON %q", observations, data)
		}
		n := counter(t, data)
		if n < last {
			t.Fatalf("observation %d: n went back from %d to %d", observations, last, n)
		}
		last = n
		observations++
		time.Sleep(100 * time.Microsecond) // the reader's sampling pace, leaving the CPUs to the writers
	}
	t.Logf("%d observations while the children ran", observations)

	if n := counter(t, []byte(readFile(t, path))); n != 2*incrementsPerProcess {
		t.Errorf("n = %d, want %d", n, 2*incrementsPerProcess)
	}
	assertNoTemps(t, dir)
}

// TestContextWhileOtherProcessHolds: while another process holds the sidecar
// flock, Update and Read return the context's error once it is done, without
// calling fn or writing; when the other process lets go, Update proceeds.
func TestContextWhileOtherProcessHolds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "extensions_config.json")
	writeFile(t, path, `{"n": 0}`, 0o600)

	c := startHelper(t, "hold", path)
	c.await(t, "locked")
	if !sidecarHeld(t, filepath.Join(dir, ".extensions_config.json.lock")) {
		t.Fatal("helper reports the lock taken but the sidecar is not locked")
	}

	f := New(path, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	called := false
	err := f.Update(ctx, func([]byte, bool) ([]byte, error) {
		called = true
		return []byte(`{"n": 99}`), nil
	}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || called {
		t.Errorf("Update = %v (fn called %v), want context.DeadlineExceeded", err, called)
	}
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, _, err := f.Read(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Read = %v, want context.Canceled", err)
	}
	if got := readFile(t, path); got != `{"n": 0}` {
		t.Errorf("content = %q", got)
	}
	assertNoTemps(t, dir)

	if err := c.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v; stderr: %s", err, c.stderr)
	}
	if err := f.Update(context.Background(), increment, nil); err != nil {
		t.Fatal(err)
	}
	if n := counter(t, []byte(readFile(t, path))); n != 1 {
		t.Errorf("n = %d, want 1", n)
	}
}
