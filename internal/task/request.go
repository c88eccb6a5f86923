package task

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// LocalIDPrefix starts every local task id.
const LocalIDPrefix = "mcp-task-"

// LocalID returns a fresh local task id: LocalIDPrefix and 32 random hex
// digits. This is the only id agents and the task API ever see.
func LocalID() string {
	var b [16]byte
	// crypto/rand.Read never returns an error; it aborts the program if
	// the system's random source fails.
	_, _ = rand.Read(b[:])
	return LocalIDPrefix + hex.EncodeToString(b[:])
}

// Reference identifies a persisted task to its driver: who owns it, which
// server runs it and the remote handle the driver returned at submit.
type Reference struct {
	LocalTaskID  string
	UserID       string
	ThreadID     string
	ServerName   string
	RemoteTaskID string
	// DriverData is what the driver asked to keep at submit (for the
	// ordinary driver, its tool names). Never nil when read from a store.
	DriverData map[string]string
}

// SubmitRequest asks a driver to start a remote task for an agent's call.
type SubmitRequest struct {
	UserID   string
	ThreadID string
	// RunID and ToolCallID tie the task to the agent run that started it;
	// "" when unknown.
	RunID      string
	ToolCallID string
	// ServerName is the MCP server that runs the task.
	ServerName string
	// TaskName is the task toolset's display name.
	TaskName string
	// Arguments are the agent's business arguments, a JSON object (nil
	// means {}).
	Arguments json.RawMessage
	// Secrets are the submitting request's per-request credentials
	// (headers_from_context applies to submit only). Never persisted.
	Secrets map[string]string `json:"-"`
	// DriverData configures the driver for this task.
	DriverData map[string]string
	// LocalTaskID is the id the task will be stored under; the service sets
	// it before calling the driver, so a driver may pass it on.
	LocalTaskID string
}

// Validate checks what must fit storage before any remote work starts:
// server_name and task_name not blank and within their column sizes, and
// arguments, when given, a JSON object.
func (r SubmitRequest) Validate() error {
	if err := checkName("server_name", r.ServerName, MaxServerNameChars); err != nil {
		return err
	}
	if err := checkName("task_name", r.TaskName, MaxTaskNameChars); err != nil {
		return err
	}
	if !isNull(r.Arguments) && (!isObject(r.Arguments) || !json.Valid(r.Arguments)) {
		return errors.New("arguments must be a JSON object")
	}
	return nil
}

// Submission is a driver's answer to a submit: the remote handle, the
// first snapshot and the driver data to persist with the task.
type Submission struct {
	RemoteTaskID string
	State        State
	DriverData   map[string]string
}

// Validate checks the remote handle is not blank. Its length is checked by
// CheckRemoteTaskID, separately, because a too-long handle names real remote
// work that must be cancelled, while a blank one names none.
func (s Submission) Validate() error {
	if strings.TrimSpace(s.RemoteTaskID) == "" {
		return errors.New("remote_task_id must not be empty")
	}
	return nil
}

// CheckRemoteTaskID returns a *ProtocolError when id does not fit the
// remote_task_id column (MaxRemoteTaskIDChars characters).
func CheckRemoteTaskID(id string) error {
	if utf8.RuneCountInString(id) > MaxRemoteTaskIDChars {
		return Protocolf("MCP task remote_task_id must not exceed %d characters", MaxRemoteTaskIDChars)
	}
	return nil
}

func checkName(field, v string, max int) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%s must not be empty", field)
	}
	if utf8.RuneCountInString(v) > max {
		return fmt.Errorf("%s must not exceed %d characters", field, max)
	}
	return nil
}
