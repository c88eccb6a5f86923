// Package testnpm gives tests real, third-party MCP servers: the official
// npm packages pinned in testdata/npm (package.json and package-lock.json).
// They are installed with
//
//	npm ci --prefix testdata/npm
//
// and run with the node on PATH. When they are not installed, tests that need
// them are skipped, except under CI=true, where that is a failure: CI must
// exercise them.
package testnpm

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/testmcp"
)

// InstallHint is the command that installs the pinned servers, run from the
// repository root.
const InstallHint = "npm ci --prefix testdata/npm"

// startTimeout is how long server-everything may take to accept TCP
// connections (stopping is testmcp.Supervise's job).
const (
	startTimeout = 30 * time.Second
)

// Package directories under testdata/npm/node_modules.
const (
	everythingPackage = "@modelcontextprotocol/server-everything"
	filesystemPackage = "@modelcontextprotocol/server-filesystem"
)

// Everything returns the absolute path of server-everything's dist/index.js
// (stdio by default; "streamableHttp" and "sse" select the HTTP modes). It
// skips the test, or fails it when CI is "true", if the package is not
// installed or node is not on PATH.
func Everything(t testing.TB) string {
	t.Helper()
	return entryPoint(t, everythingPackage)
}

// Filesystem returns the absolute path of server-filesystem's dist/index.js
// (stdio only; pass the allowed directories as arguments). It skips or fails
// like Everything.
func Filesystem(t testing.TB) string {
	t.Helper()
	return entryPoint(t, filesystemPackage)
}

func entryPoint(t testing.TB, pkg string) string {
	t.Helper()
	root := testmcp.RepoRoot(t)
	path := filepath.Join(root, "testdata", "npm", "node_modules", filepath.FromSlash(pkg), "dist", "index.js")
	if _, err := os.Stat(path); err != nil {
		unavailable(t, "%s is not installed (%v); run `%s` from the repository root", pkg, err, InstallHint)
	}
	if _, err := exec.LookPath("node"); err != nil {
		unavailable(t, "node is not on PATH, needed to run %s (install Node.js 20+, then run `%s`)", pkg, InstallHint)
	}
	return path
}

// unavailable fails the test under CI=true and skips it otherwise.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	Unavailable(t, "testnpm: "+fmt.Sprintf(format, args...))
}

// Unavailable reports that something a test needs from testdata/npm is not
// installed: it fails the test under CI=true, where CI must exercise it,
// and skips it otherwise. msg says what is missing and how to install it.
func Unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// StartEverythingHTTP starts server-everything in streamable HTTP mode on a
// free port, waits until it accepts TCP connections there and returns its
// endpoint, http://127.0.0.1:<port>/mcp.
//
// The server cannot be handed a listening socket, so the port is picked
// first and can be taken by another process before the server binds it
// (the server then exits with "already in use", and a connection to the
// port reaches the other process). So the port is accepted only once the
// listening socket is the server's own, and another is tried otherwise.
//
// The server listens on all interfaces; tests only ever connect to
// 127.0.0.1. Its event store is never trimmed, so its memory grows with every
// call: fine for a test, not for a benchmark.
//
// The server is stopped when the test ends: it gets SIGTERM and, if it has
// not exited within five seconds, is killed. Its output is logged if the test
// failed.
func StartEverythingHTTP(t testing.TB) string {
	t.Helper()
	index := Everything(t)
	for attempt := 1; ; attempt++ {
		url, inUse := startEverythingHTTP(t, index, freePort(t))
		if !inUse {
			return url
		}
		if attempt == maxPortAttempts {
			t.Fatalf("testnpm: server-everything found its port taken %d times", attempt)
		}
	}
}

// maxPortAttempts bounds the ports StartEverythingHTTP tries.
const maxPortAttempts = 5

// startEverythingHTTP is one attempt of StartEverythingHTTP, on port;
// inUse reports that another process had the port.
func startEverythingHTTP(t testing.TB, index string, port int) (url string, inUse bool) {
	t.Helper()
	cmd := exec.Command("node", index, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var out testmcp.LockedBuffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("testnpm: start server-everything: %v", err)
	}
	proc := testmcp.Supervise(t, fmt.Sprintf("server-everything (streamableHttp, port %d)", port), cmd, out.Bytes)

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-proc.Exited:
			if strings.Contains(string(out.Bytes()), "already in use") {
				return "", true
			}
			t.Fatalf("testnpm: server-everything exited before accepting connections on %s: %v\noutput:\n%s", addr, proc.Err(), out.Bytes())
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			if owner, known := listening(cmd.Process.Pid, port); owner || !known {
				return "http://" + addr + "/mcp", false
			}
			// Another process listens there: ours is about to exit.
		} else if time.Now().After(deadline) {
			t.Fatalf("testnpm: server-everything did not accept connections on %s within %s: %v\noutput:\n%s", addr, startTimeout, err, out.Bytes())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort asks the kernel for a free loopback port and releases it for the
// server to take (StartEverythingHTTP copes with another process taking it
// in between).
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testnpm: pick a free port: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		t.Fatalf("testnpm: release port %d: %v", port, err)
	}
	return port
}

// listening reports whether process pid holds a TCP socket listening on
// port; known is false where that cannot be read (no /proc).
func listening(pid, port int) (owner, known bool) {
	inodes := map[string]bool{}
	read := false
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		read = true
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if !read {
		return false, false
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, true // gone: not ours
	}
	for _, fd := range fds {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && inodes[link] {
			return true, true
		}
	}
	return false, true
}
