// Package ordinary is DeerFlow's "ordinary-tools" task driver: a remote task
// is three plain MCP tools on one server (submit, status, cancel) that
// answer in structuredContent. Text content is never parsed, so a server
// that drifts from the contract fails its tasks loudly instead of being
// guessed at.
package ordinary

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/antler-mcp/antler/internal/task"
)

// Name is the driver's registry name.
const Name = "ordinary-tools"

// Driver data keys: the raw MCP tool name for each role. RespondToolKey is
// present only for toolsets with a respond_tool.
const (
	SubmitToolKey  = "submit_tool"
	StatusToolKey  = "status_tool"
	CancelToolKey  = "cancel_tool"
	RespondToolKey = "respond_tool"
)

// DriverData returns the driver data a task toolset hands to the driver.
func DriverData(submitTool, statusTool, cancelTool string) map[string]string {
	return map[string]string{SubmitToolKey: submitTool, StatusToolKey: statusTool, CancelToolKey: cancelTool}
}

// ToolCall is one call of an upstream MCP tool on behalf of a task.
type ToolCall struct {
	// Server is the configured MCP server name; Tool its raw tool name.
	Server string
	Tool   string
	// Arguments is the tool's arguments, a JSON object.
	Arguments json.RawMessage
	// UserID and ThreadID are the task owner's, so the call gets the same
	// credentials and stdio session scope as the owner's own calls.
	UserID   string
	ThreadID string
	// RequestScopedHeaders is true only for submit, which runs inside the
	// agent's request: per-request headers (headers_from_context) apply to
	// it and never to background status or cancel calls.
	RequestScopedHeaders bool
	// Secrets are the agent request's per-request credential values, for
	// submit only (nil for background calls).
	Secrets map[string]string
}

// ToolCaller calls an upstream MCP tool through the host's interceptor
// chain and returns the raw CallToolResult JSON. An error means the call
// itself failed (transport, timeout, denial) and is retried.
type ToolCaller interface {
	CallTool(ctx context.Context, call ToolCall) (json.RawMessage, error)
}

// Driver is the ordinary-tools driver. It keeps no state between calls.
type Driver struct {
	caller ToolCaller
}

var (
	_ task.Driver        = (*Driver)(nil)
	_ task.Answerer      = (*Driver)(nil)
	_ task.AnswerChecker = (*Driver)(nil)
)

// New returns a driver that calls tools through caller.
func New(caller ToolCaller) *Driver { return &Driver{caller: caller} }

// Submit calls the submit tool with the agent's arguments and returns the
// remote task id it answers with. The request's driver data is kept as is;
// the remote id is not added to it.
func (d *Driver) Submit(ctx context.Context, req task.SubmitRequest) (task.Submission, error) {
	if err := req.Validate(); err != nil {
		return task.Submission{}, err
	}
	// All three roles are checked now so that no remote work starts for a
	// task that could never be polled or cancelled.
	var tools [3]string
	for i, key := range []string{SubmitToolKey, StatusToolKey, CancelToolKey} {
		t, err := role(req.DriverData, key)
		if err != nil {
			return task.Submission{}, err
		}
		tools[i] = t
	}
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	content, err := d.call(ctx, ToolCall{
		Server: req.ServerName, Tool: tools[0], Arguments: args,
		UserID: req.UserID, ThreadID: req.ThreadID, RequestScopedHeaders: true, Secrets: req.Secrets,
	})
	if err != nil {
		return task.Submission{}, err
	}
	p, err := parseSubmit(content)
	if err != nil {
		return task.Submission{}, invalid(tools[0], err)
	}
	sub := task.Submission{
		RemoteTaskID: p.TaskID,
		State:        task.State{Status: task.StatusSubmitted},
		DriverData:   maps.Clone(req.DriverData),
	}
	if err := sub.Validate(); err != nil {
		return task.Submission{}, &task.ProtocolError{Err: err}
	}
	return sub, nil
}

// Status calls the status tool with the remote task id and maps its answer.
// A remote that no longer knows the task (error_code task_not_found) fails
// it permanently.
func (d *Driver) Status(ctx context.Context, ref task.Reference) (task.State, error) {
	return d.poll(ctx, ref, StatusToolKey, parseStatus, nil)
}

// Cancel calls the cancel tool with the remote task id and returns the
// terminal state the remote reports (a task that finished first stays
// completed or failed).
func (d *Driver) Cancel(ctx context.Context, ref task.Reference) (task.State, error) {
	return d.poll(ctx, ref, CancelToolKey, parseCancel, nil)
}

// CanAnswer reports whether the task's toolset has a respond_tool.
func (d *Driver) CanAnswer(ref task.Reference) bool { return ref.DriverData[RespondToolKey] != "" }

// Answer calls the respond tool with {task_id: remote id, action, content,
// answer_id} and maps its answer like a status answer. The remote must
// treat answer_id as an idempotency key: the service may deliver one answer
// twice. A remote that refuses the answer (error_code answer_refused) is a
// *task.ProtocolError with its error text; so is a task without a
// respond_tool. question is not sent: the remote asked it.
func (d *Driver) Answer(ctx context.Context, ref task.Reference, _ json.RawMessage, a task.Answer) (task.State, error) {
	args := map[string]any{"task_id": ref.RemoteTaskID, "action": a.Action, "answer_id": a.ID}
	if len(a.Content) > 0 {
		args["content"] = a.Content
	}
	return d.poll(ctx, ref, RespondToolKey, parseRespond, args)
}

// poll runs a status or cancel call. The remote task id is cut from the
// error texts it returns (a task's error and its poll and cancel errors are
// shown to the agent, who knows only the local id).
func (d *Driver) poll(ctx context.Context, ref task.Reference, key string, parse func([]byte) (statusPayload, error), args map[string]any) (task.State, error) {
	s, err := d.pollRemote(ctx, ref, key, parse, args)
	return task.ScrubRemoteID(s, err, ref.RemoteTaskID)
}

// pollRemote runs a status, cancel or respond call: they take {"task_id":
// remote id} (args, when not nil, for respond), never carry per-request
// headers, and must echo the persisted remote id.
func (d *Driver) pollRemote(ctx context.Context, ref task.Reference, key string, parse func([]byte) (statusPayload, error), argMap map[string]any) (task.State, error) {
	tool, err := role(ref.DriverData, key)
	if err != nil {
		return task.State{}, err
	}
	if argMap == nil {
		argMap = map[string]any{"task_id": ref.RemoteTaskID}
	}
	args, err := json.Marshal(argMap)
	if err != nil {
		return task.State{}, fmt.Errorf("encode MCP task tool '%s' arguments: %w", tool, err)
	}
	content, err := d.call(ctx, ToolCall{
		Server: ref.ServerName, Tool: tool, Arguments: args,
		UserID: ref.UserID, ThreadID: ref.ThreadID,
	})
	if err != nil {
		return task.State{}, err
	}
	p, err := parse(content)
	if err != nil {
		return task.State{}, invalid(tool, err)
	}
	if p.TaskID != ref.RemoteTaskID {
		return task.State{}, task.NewProtocolError("MCP task response task_id does not match the persisted remote task")
	}
	if key == RespondToolKey && p.ErrorCode == refusedCode {
		msg := p.Error
		if msg == "" {
			msg = refusedMessage
		}
		return task.State{}, task.NewProtocolError(msg)
	}
	s, err := p.snapshot()
	if err != nil {
		return task.State{}, invalid(tool, err)
	}
	if err := s.Validate(); err != nil {
		return task.State{}, invalid(tool, err)
	}
	return s, nil
}

// call calls tool and returns its structuredContent: a tool-reported
// error is a retryable *task.CallError, a result without structuredContent
// a protocol error.
func (d *Driver) call(ctx context.Context, c ToolCall) (json.RawMessage, error) {
	raw, err := d.caller.CallTool(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("MCP task tool '%s' call failed: %w", c.Tool, err)
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type any `json:"type"`
			Text any `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, task.Protocolf("MCP task tool '%s' returned a malformed result: %w", c.Tool, err)
	}
	if res.IsError {
		ce := &task.CallError{Tool: c.Tool}
		for _, b := range res.Content {
			text, _ := b.Text.(string)
			if t := strings.TrimSpace(text); b.Type == "text" && t != "" {
				ce.Detail = task.Truncate(t, task.MaxToolErrorDetailChars)
				break
			}
		}
		return nil, ce
	}
	if isNull(res.StructuredContent) {
		return nil, task.Protocolf("MCP task tool '%s' must return structuredContent; text content is not parsed", c.Tool)
	}
	return res.StructuredContent, nil
}

// role returns the tool name driver data names for key.
func role(data map[string]string, key string) (string, error) {
	if t := data[key]; t != "" {
		return t, nil
	}
	return "", task.Protocolf("Task driver_data is missing required '%s'", key)
}

// invalid reports a structuredContent that breaks the tool's schema.
func invalid(tool string, err error) error {
	return task.Protocolf("Invalid structuredContent from MCP task tool '%s': %w", tool, err)
}

// RemoteIDPlaceholder stands in error texts where the remote task id was.
const RemoteIDPlaceholder = task.RemoteIDPlaceholder
