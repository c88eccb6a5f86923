package plugins

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// recordHandler hands every record, with the logger's attributes, to a
// channel, so a test waits for a log line instead of sleeping.
type recordHandler struct {
	out   chan<- slog.Record
	attrs []slog.Attr
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	h.out <- r
	return nil
}
func (h recordHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return recordHandler{h.out, append(append([]slog.Attr(nil), h.attrs...), a...)}
}
func (h recordHandler) WithGroup(string) slog.Handler { return h }

// attrs flattens a record's attributes to strings.
func attrs(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	return m
}

func TestStderrLogLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxStderrLine+100)
	tests := []struct {
		name   string
		writes []string
		want   []string // level msg message [truncated]
	}{
		{"sdk.Log levels", []string{"info: hello\n", "error: bad\n", "debug: d\nwarn: w\n"},
			[]string{"INFO plugin log hello", "ERROR plugin log bad", "DEBUG plugin log d", "WARN plugin log w"}},
		{"a line split across writes", []string{"inf", "o: split ", "line", "\n"}, []string{"INFO plugin log split line"}},
		{"a stray print or a panic's trace", []string{"panic: boom\n\ngoroutine 1\n"},
			[]string{"WARN plugin stderr panic: boom", "WARN plugin stderr goroutine 1"}},
		{"an over-long line is cut", []string{"info: " + long + "\n", "info: next\n"},
			[]string{"INFO plugin log " + long[:maxStderrLine-len("info: ")] + " truncated", "INFO plugin log next"}},
		{"invalid UTF-8", []string{"info: a\xffb\r\n"}, []string{"INFO plugin log a\uFFFDb"}},
		{"no newline yet: nothing logged", []string{"info: pending"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ch := make(chan slog.Record, 16)
			log := slog.New(recordHandler{out: ch})
			w := &stderrLog{log: log, budget: newLineBudget(log)}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			close(ch)
			var got []string
			for r := range ch {
				a := attrs(r)
				line := r.Level.String() + " " + r.Message + " " + a["message"]
				if a["truncated"] == "true" {
					line += " truncated"
				}
				got = append(got, line)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestStderrLogBudget: a plugin that writes lines as fast as it can gets
// maxStderrLinesPerSecond of them into the host's log each second, and one
// warning counts the rest.
func TestStderrLogBudget(t *testing.T) {
	t.Parallel()
	ch := make(chan slog.Record, 2*maxStderrLinesPerSecond)
	log := slog.New(recordHandler{out: ch})
	clock := time.Unix(1000, 0)
	budget := newLineBudget(log)
	budget.now = func() time.Time { return clock }
	out, synced := &stderrLog{log: log, budget: budget}, &stderrLog{log: log, budget: budget}
	for i := range 3 * maxStderrLinesPerSecond {
		w := out
		if i%2 == 1 {
			w = synced // both streams draw on the one budget
		}
		_, _ = w.Write([]byte("info: flood\n"))
	}
	clock = clock.Add(time.Second)
	_, _ = out.Write([]byte("info: after\n"))
	close(ch)
	var logged int
	var report, after bool
	for r := range ch {
		a := attrs(r)
		switch {
		case r.Message == "plugin log" && a["message"] == "flood":
			logged++
		case r.Message == "plugin log lines dropped":
			report = a["dropped"] == fmt.Sprint(2*maxStderrLinesPerSecond)
		case a["message"] == "after":
			after = true
		}
	}
	if logged != maxStderrLinesPerSecond || !report || !after {
		t.Errorf("logged %d flood lines (want %d), dropped count reported %v, next second's line logged %v", logged, maxStderrLinesPerSecond, report, after)
	}
}

// TestProcessPluginLogReachesTheHostLog: what a process plugin logs with
// sdk.Log reaches the host's log with the plugin's name, as a Wasm guest's
// log line does (it was dropped before).
func TestProcessPluginLogReachesTheHostLog(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "audit")
	cmd := exec.Command("go", "build", "-o", bin, "./internal/plugins/testdata/ownmodule")
	cmd.Dir = testmcp.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ch := make(chan slog.Record, 64)
	host, err := NewHost("", slog.New(recordHandler{out: ch}))
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	p, err := host.Load(context.Background(), Entry{Name: "mcpInterceptors[0]", Kind: KindProcess, Path: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	req := abi.InterceptRequest{Server: "s", Tool: "s_read", OriginalTool: "read", UserID: "alice"}
	if _, err := p.Intercept(context.Background(), "alice", &req); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case r := <-ch:
			a := attrs(r)
			if r.Message == "plugin log" && a["message"] == "audit: alice called s_read" {
				if r.Level != slog.LevelInfo || a["plugin"] != "mcpInterceptors[0]" {
					t.Fatalf("logged at %s with attributes %v", r.Level, a)
				}
				return
			}
		case <-timeout:
			t.Fatal("the plugin's sdk.Log line never reached the host's log")
		}
	}
}
