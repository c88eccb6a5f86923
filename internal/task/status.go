package task

import (
	"errors"
	"fmt"
)

// Status is where a durable MCP task is in its life. The six values and
// their spellings are DeerFlow's and are stored as-is in the status column.
type Status string

// The task statuses.
const (
	StatusSubmitted     Status = "submitted"
	StatusWorking       Status = "working"
	StatusInputRequired Status = "input_required"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusCancelled     Status = "cancelled"
)

// ErrUnknownStatus is wrapped by ParseStatus when the text names no status.
var ErrUnknownStatus = errors.New("unknown MCP task status")

// AllStatuses returns the six statuses in lifecycle order (a fresh slice).
func AllStatuses() []Status {
	return []Status{StatusSubmitted, StatusWorking, StatusInputRequired,
		StatusCompleted, StatusFailed, StatusCancelled}
}

// PollableStatuses returns the statuses the service keeps polling, for a
// store's "status IN (...)" claim (a fresh slice).
func PollableStatuses() []Status {
	return []Status{StatusSubmitted, StatusWorking, StatusInputRequired}
}

// TerminalStatuses returns the statuses a task never leaves (a fresh slice).
func TerminalStatuses() []Status {
	return []Status{StatusCompleted, StatusFailed, StatusCancelled}
}

// ParseStatus returns the status spelled exactly s. Anything else is an
// error wrapping ErrUnknownStatus that lists the accepted values.
func ParseStatus(s string) (Status, error) {
	st := Status(s)
	if !st.Valid() {
		return "", fmt.Errorf("%w %q: want one of submitted, working, input_required, completed, failed, cancelled", ErrUnknownStatus, s)
	}
	return st, nil
}

// Valid reports whether s is one of the six statuses.
func (s Status) Valid() bool { return s.IsPollable() || s.IsTerminal() }

// IsPollable reports whether the remote task is still running, so the
// service must keep asking its driver (submitted, working, input_required).
func (s Status) IsPollable() bool {
	return s == StatusSubmitted || s == StatusWorking || s == StatusInputRequired
}

// IsTerminal reports whether the task is finished for good (completed,
// failed, cancelled); a terminal row is never written again.
func (s Status) IsTerminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// NeedsAttention reports whether the user must hear about this status:
// input_required or any terminal status. Only these produce notifications.
func (s Status) NeedsAttention() bool { return s == StatusInputRequired || s.IsTerminal() }

// String returns the stored spelling.
func (s Status) String() string { return string(s) }

// UnmarshalText parses a status through ParseStatus, so decoding JSON or
// YAML into a Status rejects unknown values.
func (s *Status) UnmarshalText(b []byte) error {
	st, err := ParseStatus(string(b))
	if err != nil {
		return err
	}
	*s = st
	return nil
}
