package task

import (
	"errors"
	"fmt"
)

// ProtocolError is bad output from a remote task server: a malformed
// payload, a mismatched task id, an oversized or non-JSON field. Retrying
// cannot fix it, so the service fails the task permanently with Error() as
// the task's error instead of backing off.
type ProtocolError struct {
	Err error
}

// NewProtocolError returns a ProtocolError with the message msg.
func NewProtocolError(msg string) *ProtocolError {
	return &ProtocolError{Err: errors.New(msg)}
}

// Protocolf returns a ProtocolError formatted like fmt.Errorf (so %w wraps).
func Protocolf(format string, args ...any) *ProtocolError {
	return &ProtocolError{Err: fmt.Errorf(format, args...)}
}

func (e *ProtocolError) Error() string { return e.Err.Error() }
func (e *ProtocolError) Unwrap() error { return e.Err }

// CallError is a tool-level failure a remote tool reported itself (an MCP
// result with isError true). The server is reachable and may recover, so
// the call is retried with backoff like any transport failure.
type CallError struct {
	// Tool is the raw MCP tool name that failed.
	Tool string
	// Detail is the tool's first non-empty text, at most
	// MaxToolErrorDetailChars; "" when it gave none.
	Detail string
}

func (e *CallError) Error() string {
	msg := fmt.Sprintf("MCP task tool '%s' returned an error", e.Tool)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// IsPermanent reports whether err (or anything it wraps) is a
// *ProtocolError: the task must fail now rather than be retried.
func IsPermanent(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

// IsRetryable reports whether a failed driver call should be retried with
// backoff: every error except a permanent one, as in DeerFlow (transport
// failures, timeouts, *CallError). Callers should still check their own
// context first: a call cut short by shutdown is neither retried nor
// recorded, its lease simply expires.
func IsRetryable(err error) bool { return err != nil && !IsPermanent(err) }

// ErrEmptyDriverName is returned by Registry.Register for a blank name.
var ErrEmptyDriverName = errors.New("driver name must not be empty")

// DuplicateDriverError is returned by Registry.Register when the name is
// already taken.
type DuplicateDriverError struct{ Name string }

func (e *DuplicateDriverError) Error() string {
	return fmt.Sprintf("MCP task driver '%s' is already registered", e.Name)
}

// UnknownDriverError is returned by Registry.Get for a name nobody
// registered. The service records it as the poll error of affected tasks.
type UnknownDriverError struct{ Name string }

func (e *UnknownDriverError) Error() string {
	return fmt.Sprintf("No MCP task driver registered as '%s'", e.Name)
}
