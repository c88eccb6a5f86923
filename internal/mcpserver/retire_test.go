package mcpserver_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/antler-mcp/antler/internal/eventually"

	"github.com/mark3labs/mcp-go/client/transport"
)

// TestEndedSessionsStdioProcessExits: DELETE /mcp ends the MCP session, and
// the stdio process of its default thread leaves the pool and exits; another
// session's process and an explicitly named thread's stay.
func TestEndedSessionsStdioProcessExits(t *testing.T) {
	h := newHost(t)
	ended := h.client("2025-11-25", "")
	kept := h.client("2025-11-25", "")
	named := h.client("2025-11-25", "", transport.WithHTTPHeaders(map[string]string{"X-Antler-Thread-Id": "named"}))
	pEnded := int(pid(t, call(t, ended, "stdio_whoami", map[string]any{}, nil)))
	pKept := int(pid(t, call(t, kept, "stdio_whoami", map[string]any{}, nil)))
	pNamed := int(pid(t, call(t, named, "stdio_whoami", map[string]any{}, nil)))
	if n := h.stdioSessions(); n != 3 {
		t.Fatalf("%d stdio sessions, want 3", n)
	}
	if err := ended.Close(); err != nil { // sends DELETE /mcp
		t.Fatal(err)
	}
	if err := named.Close(); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, fmt.Sprintf("process %d of the deleted session to exit", pEnded), func() bool { return !alive(pEnded) })
	if n := h.stdioSessions(); n != 2 {
		t.Errorf("%d stdio sessions after DELETE, want 2 (the other session's, the named thread's)", n)
	}
	if !alive(pKept) || !alive(pNamed) {
		t.Errorf("other processes: session's alive %v, named thread's alive %v", alive(pKept), alive(pNamed))
	}
	if again := int(pid(t, call(t, kept, "stdio_whoami", map[string]any{}, nil))); again != pKept {
		t.Errorf("the other session's process changed: %d, was %d", again, pKept)
	}
}

// alive reports whether pid is a running process (signal 0 reaches it).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
