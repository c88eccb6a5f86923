package task_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
)

func TestErrorClasses(t *testing.T) {
	pe := task.NewProtocolError("bad payload")
	tests := []struct {
		name                 string
		err                  error
		permanent, retryable bool
	}{
		{"nil", nil, false, false},
		{"protocol", pe, true, false},
		{"wrapped protocol", fmt.Errorf("poll: %w", pe), true, false},
		{"call error", &task.CallError{Tool: "status"}, false, true},
		{"transport", errors.New("connection refused"), false, true},
		{"deadline", context.DeadlineExceeded, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := task.IsPermanent(tt.err); got != tt.permanent {
				t.Errorf("IsPermanent = %v, want %v", got, tt.permanent)
			}
			if got := task.IsRetryable(tt.err); got != tt.retryable {
				t.Errorf("IsRetryable = %v, want %v", got, tt.retryable)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	cause := errors.New("unexpected end of JSON input")
	wrapped := task.Protocolf("MCP task result is not valid JSON: %w", cause)
	tests := []struct {
		err  error
		want string
	}{
		{task.NewProtocolError("x"), "x"},
		{wrapped, "MCP task result is not valid JSON: unexpected end of JSON input"},
		{&task.CallError{Tool: "status_report"}, "MCP task tool 'status_report' returned an error"},
		{&task.CallError{Tool: "status_report", Detail: "busy"}, "MCP task tool 'status_report' returned an error: busy"},
		{task.ErrEmptyDriverName, "driver name must not be empty"},
		{&task.DuplicateDriverError{Name: "x"}, "MCP task driver 'x' is already registered"},
		{&task.UnknownDriverError{Name: "x"}, "No MCP task driver registered as 'x'"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	if !errors.Is(wrapped, cause) {
		t.Error("Protocolf does not wrap its %w operand")
	}
}
