package plugins

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// maxStderrLine bounds one line of a process plugin's standard error, the same
// bound a Wasm guest's log line has.
const maxStderrLine = 4096

// maxStderrLinesPerSecond bounds how many lines one plugin process puts in
// the host's log each second: a process writes whenever it likes, between
// calls too, so without it a hostile or looping plugin could flood the log.
// The lines over it are dropped and counted in one warning.
const maxStderrLinesPerSecond = 100

// lineBudget is one plugin process's log budget, shared by its two stderr
// streams (which are written from two goroutines).
type lineBudget struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	window  time.Time // the start of the current second
	used    int
	dropped int
}

func newLineBudget(log *slog.Logger) *lineBudget {
	return &lineBudget{log: log, now: time.Now}
}

// take reports whether one more line may be logged now; it first reports
// the lines dropped in an earlier second.
func (b *lineBudget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := b.now(); now.Sub(b.window) >= time.Second {
		if b.dropped > 0 {
			b.log.Warn("plugin log lines dropped", "dropped", b.dropped, "limit_per_second", maxStderrLinesPerSecond)
		}
		b.window, b.used, b.dropped = now, 0, 0
	}
	if b.used >= maxStderrLinesPerSecond {
		b.dropped++
		return false
	}
	b.used++
	return true
}

// stderrLog turns a process plugin's standard error into the host's log: a
// line sdk.Log wrote ("info: message") is logged at its level as the Wasm
// carrier logs a guest's line; any other line (a panic's trace, a stray
// print) is logged at warn as the plugin's stderr. A line longer than
// maxStderrLine is cut there and the rest of it dropped, so a plugin cannot
// make one log record of unbounded size; lines over the process's budget
// (lineBudget) are dropped.
type stderrLog struct {
	log    *slog.Logger
	budget *lineBudget
	buf    []byte
	cut    bool // the current line passed maxStderrLine
}

func (w *stderrLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxStderrLine - len(w.buf); len(chunk) > room {
			chunk, w.cut = chunk[:max(room, 0)], true
		}
		w.buf = append(w.buf, chunk...)
		if i < 0 {
			break
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

// emit logs the buffered line and starts the next one.
func (w *stderrLog) emit() {
	line := strings.TrimRight(string(w.buf), "\r")
	cut := w.cut
	w.buf, w.cut = w.buf[:0], false
	if line == "" || !w.budget.take() {
		return
	}
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "\uFFFD")
	}
	args := []any{"message", line}
	if cut {
		args = append(args, "truncated", true)
	}
	for _, l := range [...]struct {
		prefix string
		level  slog.Level
	}{{"debug: ", slog.LevelDebug}, {"info: ", slog.LevelInfo}, {"warn: ", slog.LevelWarn}, {"error: ", slog.LevelError}} {
		if msg, ok := strings.CutPrefix(line, l.prefix); ok {
			args[1] = msg
			w.log.Log(context.Background(), l.level, "plugin log", args...)
			return
		}
	}
	w.log.Warn("plugin stderr", args...)
}
