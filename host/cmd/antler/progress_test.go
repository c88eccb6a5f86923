package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/antler-mcp/antler/internal/testmcp"
)

// TestToolsProgressOnATerminal runs antler tools with its stderr on a real
// pseudo-terminal: a line per server as its discovery ends, with its time.
// On a pipe or a file the same run prints no progress line.
func TestToolsProgressOnATerminal(t *testing.T) {
	bin := testmcp.Build(t)
	cfg := writeFile(t, "c.json", fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}, "broken": {"command": "/nonexistent/x"}}}`, bin))

	master, tty := openPTY(t)
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once the terminal side is closed
		read <- string(b)
	}()
	var out bytes.Buffer
	code := run([]string{"tools", "--config", cfg}, &out, tty)
	tty.Close()
	term := <-read
	if code != 1 {
		t.Errorf("exit %d, want 1 because a server failed", code)
	}
	for _, re := range []string{
		`(?m)^  demo +stdio +connected, \d+ tools \([0-9.]+(µs|ms|s)\)\r?$`,
		`(?m)^  broken +stdio +failed after [0-9.]+(µs|ms|s): .+\r?$`,
	} {
		if !regexp.MustCompile(re).MatchString(term) {
			t.Errorf("terminal output lacks %s:\n%s", re, term)
		}
	}

	var pipe bytes.Buffer
	run([]string{"tools", "--config", cfg}, &out, &pipe)
	if strings.Contains(pipe.String(), "connected,") || strings.Contains(pipe.String(), "failed after") {
		t.Errorf("progress lines on a non-terminal:\n%s", &pipe)
	}
}

// openPTY opens a pseudo-terminal pair: what is written to tty is read from
// master.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no pseudo-terminal: %v", err)
		}
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pty number: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	return m, s
}
