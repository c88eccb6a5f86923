package task_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
)

func TestParseStatus(t *testing.T) {
	tests := []struct {
		in      string
		want    task.Status
		wantErr bool
	}{
		{in: "submitted", want: task.StatusSubmitted},
		{in: "working", want: task.StatusWorking},
		{in: "input_required", want: task.StatusInputRequired},
		{in: "completed", want: task.StatusCompleted},
		{in: "failed", want: task.StatusFailed},
		{in: "cancelled", want: task.StatusCancelled},
		{in: "", wantErr: true},
		{in: "running", wantErr: true}, // the ordinary driver's word, not a status
		{in: "Working", wantErr: true},
		{in: " working", wantErr: true},
		{in: "canceled", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := task.ParseStatus(tt.in)
			if tt.wantErr {
				if !errors.Is(err, task.ErrUnknownStatus) {
					t.Fatalf("ParseStatus(%q) error = %v, want ErrUnknownStatus", tt.in, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseStatus(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseStatusMessage(t *testing.T) {
	_, err := task.ParseStatus("paused")
	want := `unknown MCP task status "paused": want one of submitted, working, input_required, completed, failed, cancelled`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
}

func TestStatusSets(t *testing.T) {
	tests := []struct {
		status                      task.Status
		pollable, terminal, attends bool
	}{
		{task.StatusSubmitted, true, false, false},
		{task.StatusWorking, true, false, false},
		{task.StatusInputRequired, true, false, true},
		{task.StatusCompleted, false, true, true},
		{task.StatusFailed, false, true, true},
		{task.StatusCancelled, false, true, true},
		{task.Status("bogus"), false, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			if got := tt.status.IsPollable(); got != tt.pollable {
				t.Errorf("IsPollable = %v, want %v", got, tt.pollable)
			}
			if got := tt.status.IsTerminal(); got != tt.terminal {
				t.Errorf("IsTerminal = %v, want %v", got, tt.terminal)
			}
			if got := tt.status.NeedsAttention(); got != tt.attends {
				t.Errorf("NeedsAttention = %v, want %v", got, tt.attends)
			}
			if got := tt.status.Valid(); got != (tt.pollable || tt.terminal) {
				t.Errorf("Valid = %v", got)
			}
			s := task.State{Status: tt.status}
			if s.IsPollable() != tt.pollable || s.NeedsAttention() != tt.attends {
				t.Errorf("State sets disagree with Status sets")
			}
		})
	}
}

func TestStatusLists(t *testing.T) {
	all := task.AllStatuses()
	if len(all) != 6 {
		t.Fatalf("AllStatuses = %v", all)
	}
	for _, s := range task.PollableStatuses() {
		if !s.IsPollable() {
			t.Errorf("%s listed as pollable", s)
		}
	}
	for _, s := range task.TerminalStatuses() {
		if !s.IsTerminal() {
			t.Errorf("%s listed as terminal", s)
		}
	}
	union := append(task.PollableStatuses(), task.TerminalStatuses()...)
	if !slices.Equal(union, all) {
		t.Errorf("pollable ∪ terminal = %v, want %v", union, all)
	}
	// Each call returns a fresh slice, so callers cannot change the sets.
	task.PollableStatuses()[0] = task.StatusFailed
	if task.PollableStatuses()[0] != task.StatusSubmitted {
		t.Error("PollableStatuses shares its slice")
	}
}

func TestStatusUnmarshalText(t *testing.T) {
	var v struct{ S task.Status }
	if err := json.Unmarshal([]byte(`{"S":"working"}`), &v); err != nil || v.S != task.StatusWorking {
		t.Fatalf("got %q, %v", v.S, err)
	}
	if err := json.Unmarshal([]byte(`{"S":"running"}`), &v); !errors.Is(err, task.ErrUnknownStatus) {
		t.Fatalf("error = %v, want ErrUnknownStatus", err)
	}
}
