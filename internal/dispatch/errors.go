package dispatch

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/antler-mcp/antler/internal/sessionpool"
)

// CallError is a failed request. Message is safe to show to a model: it
// names the server and the tool (or method) and never carries a credential
// or a URL.
type CallError struct {
	Server string
	// Tool is the upstream's tool name; empty for a non-tool method.
	Tool string
	// Method is the MCP method (MethodCallTool for a tool call).
	Method  string
	Timeout bool
	Denied  bool // an interceptor refused the request
	Message string
	Err     error
}

func (e *CallError) Error() string { return e.Message }
func (e *CallError) Unwrap() error { return e.Err }

// target names what a request was for in its failure messages: a tool call
// keeps DeerFlow's texts word for word; another method gets the same
// sentences about the request.
type target struct {
	server, tool, method string
	// session and onSession are the request's Session and OnSession.
	session   string
	onSession func(string)
	liveOnly  bool
}

func (t target) fail(err error, msg string) *CallError {
	return &CallError{Server: t.server, Tool: t.tool, Method: t.method, Err: err, Message: msg}
}

func (t target) failed() string {
	if t.method == MethodCallTool {
		return fmt.Sprintf("MCP tool '%s' on server '%s' failed", t.tool, t.server)
	}
	return fmt.Sprintf("MCP request '%s' to server '%s' failed", t.method, t.server)
}

func (t target) cancelled() string {
	if t.method == MethodCallTool {
		return fmt.Sprintf("MCP tool '%s' on server '%s' was cancelled", t.tool, t.server)
	}
	return fmt.Sprintf("MCP request '%s' to server '%s' was cancelled", t.method, t.server)
}

func (t target) timedOut(d time.Duration) string {
	if t.method == MethodCallTool {
		return fmt.Sprintf("MCP tool '%s' on server '%s' timed out after %s", t.tool, t.server, d)
	}
	return fmt.Sprintf("MCP request '%s' to server '%s' timed out after %s", t.method, t.server, d)
}

func (t target) tooLarge(limit int64) string {
	if t.method == MethodCallTool {
		return fmt.Sprintf("MCP tool '%s' on server '%s' returned a result larger than the %d-byte limit (max_result_bytes); it was discarded. Ask for less data at a time.", t.tool, t.server, limit)
	}
	return fmt.Sprintf("MCP request '%s' to server '%s' returned a result larger than the %d-byte limit (max_result_bytes); it was discarded. Ask for less data at a time.", t.method, t.server, limit)
}

// rpcError carries the server's own message, redacted and truncated.
func (t target) rpcError(msg string) string {
	if t.method == MethodCallTool {
		return fmt.Sprintf("MCP server '%s' returned an error for tool '%s': %s", t.server, t.tool, msg)
	}
	return fmt.Sprintf("MCP server '%s' returned an error for '%s': %s", t.server, t.method, msg)
}

func (t target) connectionLost() string {
	if t.method == MethodCallTool {
		return fmt.Sprintf("MCP server '%s' closed the connection during the call to '%s'", t.server, t.tool)
	}
	return fmt.Sprintf("MCP server '%s' closed the connection during the request '%s'", t.server, t.method)
}

func (t target) unavailable() string {
	return fmt.Sprintf("MCP server '%s' is unavailable", t.server)
}

// noSession tells the model why a request found no session and what to do,
// without naming processes, limits or other users.
func (t target) noSession(err error) string {
	what := fmt.Sprintf("MCP tool '%s' on server '%s'", t.tool, t.server)
	if t.method != MethodCallTool {
		what = fmt.Sprintf("MCP request '%s' to server '%s'", t.method, t.server)
	}
	if errors.Is(err, sessionpool.ErrUserLimit) {
		return what + " could not start: this user already has the maximum number of open MCP sessions, all busy with calls or background tasks. Retry after one of them finishes, or continue in an existing thread."
	}
	return what + " could not start: the host has no free MCP session right now. Retry later."
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// urlPattern matches URLs so their query strings and user info can be cut
// from messages: a token in a query parameter must not reach a log or a model.
var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// Redact removes user info, query strings and fragments from every URL in s,
// for the messages and log lines made from upstream and transport errors.
func Redact(s string) string {
	return urlPattern.ReplaceAllStringFunc(s, func(u string) string {
		scheme, rest, _ := strings.Cut(u, "://")
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			if slash := strings.IndexAny(rest, "/?#"); slash < 0 || at < slash {
				rest = rest[at+1:]
			}
		}
		if i := strings.IndexAny(rest, "?#"); i >= 0 {
			rest = rest[:i] + "?…"
		}
		return scheme + "://" + rest
	})
}
