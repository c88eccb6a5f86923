package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sync"
)

// Diagnostics for measuring the server itself (the protocol-cost benchmark
// in internal/upstream): both are off unless their variable is set.
const (
	// envCPUProfile names a file to write a CPU profile of the whole run
	// to; it is written when the server stops (stdin closed, or a signal).
	envCPUProfile = "ANTLER_DEMO_CPUPROFILE"
	// envWireLog names a file to append the first wireLogLines protocol
	// lines to, each prefixed "> " (read from the client) or "< " (written
	// to it), so the bytes a client puts on the wire can be seen.
	envWireLog = "ANTLER_DEMO_WIRELOG"
)

// wireLogLines is how many lines the wire log keeps: enough for the
// handshake and a few calls, and nothing more, so a long run costs no
// more than a counter check per read.
const wireLogLines = 16

// startDiagnostics starts what the environment asks for and returns the
// streams to serve on (stdin and stdout, tapped if the wire is logged) and
// a function that stops it all.
func startDiagnostics(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if path := os.Getenv(envCPUProfile); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", envCPUProfile, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("%s: %w", envCPUProfile, err)
		}
		stops = append(stops, func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
	if path := os.Getenv(envWireLog); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			stop()
			return nil, nil, nil, fmt.Errorf("%s: %w", envWireLog, err)
		}
		log := &wireLog{w: f, left: wireLogLines}
		stdin = &tapReader{r: stdin, tap: log.tap("> ")}
		stdout = &tapWriter{w: stdout, tap: log.tap("< ")}
		stops = append(stops, func() { f.Close() })
	}
	return stdin, stdout, stop, nil
}

// wireLog writes whole lines from both directions to one file until it
// has written its quota.
type wireLog struct {
	mu   sync.Mutex
	w    io.Writer
	left int
}

// tap returns the recorder of one direction: it collects bytes into lines
// and logs each whole one with prefix.
func (l *wireLog) tap(prefix string) func([]byte) {
	var buf []byte // guarded by l.mu
	return func(p []byte) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.left <= 0 {
			return
		}
		buf = append(buf, p...)
		for l.left > 0 {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				return
			}
			fmt.Fprintf(l.w, "%s%s\n", prefix, buf[:i])
			buf = buf[i+1:]
			l.left--
		}
		buf = nil
	}
}

// tapReader passes what it reads to tap.
type tapReader struct {
	r   io.Reader
	tap func([]byte)
}

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.tap(p[:n])
	}
	return n, err
}

// tapWriter passes what it writes to tap, before writing it, so an answer
// is logged before the request the client sends once it has it.
type tapWriter struct {
	w   io.Writer
	tap func([]byte)
}

func (t *tapWriter) Write(p []byte) (int, error) {
	t.tap(p)
	return t.w.Write(p)
}
