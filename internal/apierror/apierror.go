// Package apierror is the error an HTTP API handler returns instead of
// writing its own error response: the status to answer with, the
// model-safe message the JSON body carries, and the cause, which only the
// logs see. One error handler writes every such error, so a handler's
// failure paths are ordinary Go returns.
package apierror

import "fmt"

// Error is a handler's failure as the API answers it.
type Error struct {
	// Code is the HTTP status.
	Code int
	// Message is the body's "error": safe to show a model or a caller (no
	// secret, no host path unless the caller may see it).
	Message string
	// Err is the cause, for the logs (nil when the message says it all).
	Err error
}

// New is an Error whose message is formatted from format and args.
func New(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap is New with err kept as the cause.
func Wrap(err error, code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }
