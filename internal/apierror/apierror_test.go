package apierror_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/antler-mcp/antler/internal/apierror"
)

func TestError(t *testing.T) {
	cause := errors.New("disk full at /var/lib/antler")
	for _, tc := range []struct {
		name      string
		err       *apierror.Error
		code      int
		message   string
		wantCause error
	}{
		{"New formats the message", apierror.New(http.StatusNotFound, "MCP server '%s' not found", "docs"), 404, "MCP server 'docs' not found", nil},
		{"Wrap keeps the cause out of the message", apierror.Wrap(cause, http.StatusInternalServerError, "Failed to add MCP servers"), 500, "Failed to add MCP servers", cause},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err.Code != tc.code || tc.err.Error() != tc.message {
				t.Errorf("got %d %q, want %d %q", tc.err.Code, tc.err.Error(), tc.code, tc.message)
			}
			if !errors.Is(tc.err, tc.wantCause) && tc.wantCause != nil {
				t.Errorf("the cause is not in the chain")
			}
			var ae *apierror.Error
			if !errors.As(fmt.Errorf("handler: %w", tc.err), &ae) || ae != tc.err {
				t.Errorf("errors.As does not find the Error through a wrap")
			}
		})
	}
}

func TestJSONProblem(t *testing.T) {
	var v map[string]any
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"syntax: the offset, never the input", decode(`{"secret": x}`, &v), "invalid JSON at byte 12"},
		{"type: the kind", decode(`[1]`, &v), "got a JSON array"},
		{"end of input", io.ErrUnexpectedEOF, "unexpected end of input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := apierror.JSONProblem(tc.err); got != tc.want {
				t.Errorf("JSONProblem = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTruncateField(t *testing.T) {
	long := string(make([]byte, 70))
	for _, tc := range []struct{ in, want string }{
		{"args", "args"},
		{long, long[:64] + "…"},
	} {
		if got := apierror.TruncateField(tc.in); got != tc.want {
			t.Errorf("TruncateField(%d bytes) = %d bytes, want %d", len(tc.in), len(got), len(tc.want))
		}
	}
}

func decode(s string, v any) error { return json.Unmarshal([]byte(s), v) }
