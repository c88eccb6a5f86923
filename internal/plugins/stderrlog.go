package plugins

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"unicode/utf8"
)

// maxStderrLine bounds one line of a process plugin's standard error, the same
// bound a Wasm guest's log line has.
const maxStderrLine = 4096

// stderrLog turns a process plugin's standard error into the host's log: a
// line sdk.Log wrote ("info: message") is logged at its level as the Wasm
// carrier logs a guest's line; any other line (a panic's trace, a stray
// print) is logged at warn as the plugin's stderr. A line longer than
// maxStderrLine is cut there and the rest of it dropped, so a plugin cannot
// make one log record of unbounded size.
type stderrLog struct {
	log *slog.Logger
	buf []byte
	cut bool // the current line passed maxStderrLine
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
	if line == "" {
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
