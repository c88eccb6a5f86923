package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/antler-mcp/antler/internal/toolcache"
)

// discoveryProgress returns the hook that prints a line per server as its
// discovery ends, with its time, when w is a terminal; nil (quiet) when it
// is not, so logs and pipes get only the structured log. done stops it:
// rebuilds after start-up are in the log, not on the terminal.
func discoveryProgress(w io.Writer) (report func(toolcache.Discovered), done func()) {
	if !isTerminal(w) {
		return nil, func() {}
	}
	var (
		mu      sync.Mutex
		stopped atomic.Bool
	)
	return func(d toolcache.Discovered) {
		if stopped.Load() {
			return
		}
		line := fmt.Sprintf("  %-16s %-6s connected, %d tools (%s)", d.Server, d.Transport, d.Tools, roundDuration(d.Elapsed))
		if d.Err != nil {
			msg, _, _ := strings.Cut(d.Err.Error(), "\n")
			line = fmt.Sprintf("  %-16s %-6s failed after %s: %s", d.Server, d.Transport, roundDuration(d.Elapsed), oneLine(msg, 160))
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(w, line)
	}, func() { stopped.Store(true) }
}

// roundDuration shows a discovery time at a useful precision.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
