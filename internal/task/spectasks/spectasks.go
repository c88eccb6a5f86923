// Package spectasks is the task driver for MCP's own tasks of revision
// 2025-11-25 (SEP-1686): a tool the server runs as a task is called with
// params.task, the task it creates is polled with tasks/get, its result
// taken with tasks/result and its cancellation asked with tasks/cancel.
// Statuses, isError results and JSON-RPC errors are mapped to the
// normalised model of package task as the specification defines them.
//
// Servers that keep tasks per protocol session (a streamable HTTP server
// with a task store per Mcp-Session-Id) get every request of a task on the
// session it was created on: the driver keeps that session in the task's
// driver data. On stdio the task's requests go on the owner's (user,
// thread) session, as every call of that owner does.
//
// A task that asks for input is answered by responding to the
// elicitation/create its server sent on a tasks/result stream, which the
// driver holds pending (answer.go).
package spectasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/antler-mcp/antler/internal/task"
)

// Name is the driver's registry name.
const Name = "mcp-tasks-2025-11-25"

// Driver data keys.
const (
	// ToolKey is the raw MCP tool name the task runs.
	ToolKey = "tool"
	// TTLKey is the ttl in milliseconds asked of the server ("" or absent:
	// the server's default).
	TTLKey = "ttl_ms"
	// SessionKey is the streamable HTTP protocol session the task was
	// created on; absent for stdio, SSE and sessionless servers.
	SessionKey = "session"
)

// DriverData returns the driver data of a task running tool; ttl is the
// retention to ask for, zero for the server's default.
func DriverData(tool string, ttl time.Duration) map[string]string {
	d := map[string]string{ToolKey: tool}
	if ttl > 0 {
		d[TTLKey] = strconv.FormatInt(ttl.Milliseconds(), 10)
	}
	return d
}

// The MCP methods the driver sends.
const (
	MethodCallTool = "tools/call"
	MethodGet      = "tasks/get"
	MethodResult   = "tasks/result"
	MethodCancel   = "tasks/cancel"
	// MethodRespond is no MCP method: a Call with it sends the response
	// to a held server request (Call.RequestID, Call.Result).
	MethodRespond = "(response)"
)

// JSON-RPC error codes the mapping tells apart.
const (
	// CodeInvalidParams is the answer for an unknown task, and for a
	// tasks/cancel of a task already terminal.
	CodeInvalidParams = -32602
	// CodeInternal is a server's own failure, which may pass.
	CodeInternal = -32603
)

// Call is one request to a task's server on behalf of the task's owner.
type Call struct {
	// Server is the configured MCP server name.
	Server string
	// UserID and ThreadID are the task owner's: the same credentials and
	// stdio session as the owner's own calls.
	UserID, ThreadID string
	// Method is one of the Method constants.
	Method string
	// Tool, Arguments and Task are a tools/call's: the raw tool name, its
	// arguments and params.task.
	Tool      string
	Arguments json.RawMessage
	Task      json.RawMessage
	// Meta is a tools/call's _meta fields (the 2026-07-28 driver declares
	// the tasks extension in it); nil for none.
	Meta map[string]any
	// Params are a tasks/* request's params.
	Params json.RawMessage
	// Session is the streamable HTTP session to send on ("" for the
	// server's shared connection).
	Session string
	// Hold, when set, is offered the server requests that arrive on the
	// request's stream (a tasks/result's elicitation/create): one it
	// returns true for gets no response now, to be answered later with a
	// MethodRespond call; the others are refused.
	Hold func(ServerRequest) bool
	// RequestID and Result are a MethodRespond call's: the held server
	// request answered and its result.
	RequestID, Result json.RawMessage
	// RequestScoped is true only for the submit, made inside the agent's
	// request: its per-request credentials (Secrets) apply to it alone.
	RequestScoped bool
	Secrets       map[string]string
}

// Reply is a request's raw JSON-RPC result and the streamable HTTP session
// it went on ("" when none).
type Reply struct {
	Result  json.RawMessage
	Session string
}

// Caller sends a request to an upstream MCP server through the host's
// credential chain. A JSON-RPC error answer must be returned as (or
// wrapping) an *RPCError; a request on a Session the server has forgotten
// as an error wrapping ErrSessionGone; any other error is a failure of the
// exchange, which is retried.
type Caller interface {
	Call(ctx context.Context, call Call) (Reply, error)
}

// RPCError is a JSON-RPC error the server answered with.
type RPCError struct {
	Code    int
	Message string
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// ErrSessionGone is wrapped by a Caller's error when the server no longer
// has the protocol session the task lives in: the task is lost with it.
var ErrSessionGone = errors.New("the MCP server no longer has the task's protocol session")

// Options bound the server's poll hints.
type Options struct {
	// MinPollInterval and MaxPollInterval bound the server's pollInterval
	// (zero: one second and five minutes). Without a hint the runtime's own
	// cadence applies.
	MinPollInterval, MaxPollInterval time.Duration
	// CaptureWait bounds how long a poll that finds a task input_required
	// waits on tasks/result for the server's elicitation/create (zero:
	// DefaultCaptureWait; the poll's own deadline bounds it too).
	CaptureWait time.Duration
}

// Driver is the 2025-11-25 tasks driver. It keeps no state between calls:
// everything a task needs is in its reference.
type Driver struct {
	caller  Caller
	polls   pollBounds
	capture time.Duration // Options.CaptureWait
}

// pollBounds bound a server's poll interval hint.
type pollBounds struct{ min, max time.Duration }

// newPollBounds applies the defaults of Options.
func newPollBounds(opts Options) pollBounds {
	b := pollBounds{min: opts.MinPollInterval, max: opts.MaxPollInterval}
	if b.min <= 0 {
		b.min = time.Second
	}
	if b.max <= 0 {
		b.max = 5 * time.Minute
	}
	b.max = max(b.max, b.min)
	return b
}

var (
	_ task.Driver        = (*Driver)(nil)
	_ task.Answerer      = (*Driver)(nil)
	_ task.AnswerChecker = (*Driver)(nil)
)

// New returns a driver that sends through caller.
func New(caller Caller, opts Options) *Driver {
	w := opts.CaptureWait
	if w <= 0 {
		w = DefaultCaptureWait
	}
	return &Driver{caller: caller, polls: newPollBounds(opts), capture: w}
}

// remoteTask is the spec's Task object.
type remoteTask struct {
	TaskID        string   `json:"taskId"`
	Status        string   `json:"status"`
	StatusMessage string   `json:"statusMessage"`
	PollInterval  *float64 `json:"pollInterval"`
}

// Submit calls the tool with params.task and returns the task the server
// created. The session the call went on is kept with the task.
func (d *Driver) Submit(ctx context.Context, req task.SubmitRequest) (task.Submission, error) {
	if err := req.Validate(); err != nil {
		return task.Submission{}, err
	}
	tool := req.DriverData[ToolKey]
	if tool == "" {
		return task.Submission{}, task.Protocolf("Task driver_data is missing required '%s'", ToolKey)
	}
	meta := map[string]any{}
	if v := req.DriverData[TTLKey]; v != "" {
		ttl, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ttl <= 0 {
			return task.Submission{}, task.Protocolf("Task driver_data '%s' must be a positive number of milliseconds", TTLKey)
		}
		meta["ttl"] = ttl
	}
	taskParam, _ := json.Marshal(meta)
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	reply, err := d.caller.Call(ctx, Call{
		Server: req.ServerName, UserID: req.UserID, ThreadID: req.ThreadID,
		Method: MethodCallTool, Tool: tool, Arguments: args, Task: taskParam,
		RequestScoped: true, Secrets: req.Secrets,
	})
	if err != nil {
		return task.Submission{}, fmt.Errorf("MCP task tool '%s' call failed: %w", tool, err)
	}
	var created struct {
		Task    *remoteTask     `json:"task"`
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"isError"`
	}
	if err := json.Unmarshal(reply.Result, &created); err != nil {
		return task.Submission{}, task.Protocolf("MCP task tool '%s' returned a malformed result: %w", tool, err)
	}
	if created.Task == nil {
		if created.IsError {
			return task.Submission{}, &task.CallError{Tool: tool, Detail: toolErrorText(reply.Result)}
		}
		return task.Submission{}, task.Protocolf("MCP server answered the task-augmented call of tool '%s' without a task", tool)
	}
	if strings.TrimSpace(created.Task.TaskID) == "" {
		return task.Submission{}, task.Protocolf("MCP task tool '%s' created a task without a taskId", tool)
	}
	snap, err := d.snapshot(ctx, task.Reference{ServerName: req.ServerName, UserID: req.UserID, ThreadID: req.ThreadID,
		RemoteTaskID: created.Task.TaskID, DriverData: map[string]string{ToolKey: tool, SessionKey: reply.Session}}, *created.Task)
	if err != nil {
		return task.Submission{}, err
	}
	data := maps.Clone(req.DriverData)
	if reply.Session != "" {
		data[SessionKey] = reply.Session
	}
	return task.Submission{RemoteTaskID: created.Task.TaskID, State: snap, DriverData: data}, nil
}

// Status polls the task with tasks/get and, once it is completed or
// failed, takes its outcome with tasks/result. The remote task id is cut
// from the error texts (agents know only the local id), as in every
// driver.
func (d *Driver) Status(ctx context.Context, ref task.Reference) (task.State, error) {
	s, err := d.status(ctx, ref)
	return task.ScrubRemoteID(s, err, ref.RemoteTaskID)
}

func (d *Driver) status(ctx context.Context, ref task.Reference) (task.State, error) {
	rt, err := d.taskRequest(ctx, ref, MethodGet)
	if err != nil {
		return task.State{}, err
	}
	s, err := d.snapshot(ctx, ref, rt)
	if err == nil && rt.Status != "input_required" && ref.DriverData[HeldRequestKey] != "" {
		s.DriverData = withoutHeld(ref.DriverData) // the server no longer waits on it
	}
	return s, err
}

// Cancel asks for the task's cancellation with tasks/cancel. A task that
// was already terminal (the server refuses with -32602) is reported as it
// ended; a server that still reports it running after the request makes a
// retryable error.
func (d *Driver) Cancel(ctx context.Context, ref task.Reference) (task.State, error) {
	s, err := d.cancel(ctx, ref)
	return task.ScrubRemoteID(s, err, ref.RemoteTaskID)
}

func (d *Driver) cancel(ctx context.Context, ref task.Reference) (task.State, error) {
	rt, err := d.taskRequest(ctx, ref, MethodCancel)
	var rpc *RPCError
	if errors.As(err, &rpc) && rpc.Code == CodeInvalidParams {
		if rt, err = d.taskRequest(ctx, ref, MethodGet); err != nil {
			return task.State{}, err
		}
	} else if err != nil {
		return task.State{}, err
	}
	s, err := d.snapshot(ctx, ref, rt)
	if err != nil {
		return task.State{}, err
	}
	if !s.Status.IsTerminal() {
		return task.State{}, fmt.Errorf("MCP task is still %s after tasks/cancel", s.Status)
	}
	return s, nil
}

// taskRequest sends a tasks/get or tasks/cancel for ref's task on its
// session and checks the Task it answers with.
func (d *Driver) taskRequest(ctx context.Context, ref task.Reference, method string) (remoteTask, error) {
	raw, err := d.send(ctx, ref, method)
	if err != nil {
		return remoteTask{}, err
	}
	var rt remoteTask
	if err := json.Unmarshal(raw, &rt); err != nil {
		return remoteTask{}, task.Protocolf("MCP %s returned a malformed task: %w", method, err)
	}
	if rt.TaskID != ref.RemoteTaskID {
		return remoteTask{}, task.NewProtocolError("MCP task response taskId does not match the persisted remote task")
	}
	return rt, nil
}

// send sends method with {taskId} on the task's session and classifies
// what fails: a forgotten session and any JSON-RPC error but an internal
// one fail the task for good (the server does not know the task, or
// refuses to say); everything else is retried. tasks/cancel keeps its
// -32602 as an *RPCError for Cancel to read.
func (d *Driver) send(ctx context.Context, ref task.Reference, method string) (json.RawMessage, error) {
	params, _ := json.Marshal(map[string]string{"taskId": ref.RemoteTaskID})
	reply, err := d.caller.Call(ctx, Call{
		Server: ref.ServerName, UserID: ref.UserID, ThreadID: ref.ThreadID,
		Method: method, Params: params, Session: ref.DriverData[SessionKey],
	})
	if err == nil {
		return reply.Result, nil
	}
	if errors.Is(err, ErrSessionGone) {
		return nil, task.Protocolf("Remote MCP task was lost: %w", err)
	}
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code == CodeInternal {
		return nil, fmt.Errorf("MCP %s failed: %w", method, err)
	}
	if method == MethodCancel && rpc.Code == CodeInvalidParams {
		return nil, rpc
	}
	return nil, task.Protocolf("Remote MCP task was not found or refused %s: %s", method, task.Truncate(rpc.Message, task.MaxToolErrorDetailChars))
}

// snapshot maps a Task to the normalised model. Completed and failed tasks
// take their outcome from tasks/result: the tool's result, its isError
// text, or the JSON-RPC error the call ended with.
func (d *Driver) snapshot(ctx context.Context, ref task.Reference, rt remoteTask) (task.State, error) {
	switch rt.Status {
	case "working":
		return task.State{Status: task.StatusWorking, PollAfterSeconds: d.polls.hint(rt.PollInterval)}, nil
	case "input_required":
		return d.inputRequired(ctx, ref, rt)
	case "cancelled":
		return task.State{Status: task.StatusCancelled, Error: rt.StatusMessage}, nil
	case "completed", "failed":
		return d.outcome(ctx, ref, rt)
	}
	return task.State{}, task.Protocolf("MCP task has an unknown status %q", task.Truncate(rt.Status, 64))
}

// outcome takes a terminal task's result with tasks/result.
func (d *Driver) outcome(ctx context.Context, ref task.Reference, rt remoteTask) (task.State, error) {
	params, _ := json.Marshal(map[string]string{"taskId": ref.RemoteTaskID})
	reply, err := d.caller.Call(ctx, Call{
		Server: ref.ServerName, UserID: ref.UserID, ThreadID: ref.ThreadID,
		Method: MethodResult, Params: params, Session: ref.DriverData[SessionKey],
	})
	tool := ref.DriverData[ToolKey]
	var rpc *RPCError
	switch {
	case errors.Is(err, ErrSessionGone):
		return task.State{}, task.Protocolf("Remote MCP task result was lost: %w", err)
	case errors.As(err, &rpc) && rpc.Code != CodeInternal:
		// The original request's own JSON-RPC error.
		return task.State{Status: task.StatusFailed, Error: fmt.Sprintf("MCP tool '%s' failed: %s", tool, rpc.Message)}, nil
	case err != nil:
		return task.State{}, fmt.Errorf("MCP %s failed: %w", MethodResult, err)
	}
	var res struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(reply.Result, &res); err != nil {
		return task.State{}, task.Protocolf("MCP %s returned a malformed result: %w", MethodResult, err)
	}
	if res.IsError || rt.Status == "failed" {
		msg := fmt.Sprintf("MCP tool '%s' returned an error", tool)
		if detail := toolErrorText(reply.Result); detail != "" {
			msg += ": " + detail
		} else if rt.StatusMessage != "" {
			msg += ": " + rt.StatusMessage
		}
		return task.State{Status: task.StatusFailed, Error: msg}, nil
	}
	return task.State{Status: task.StatusCompleted, Result: withoutRelatedTask(reply.Result)}, nil
}

// hint is the server's poll interval (milliseconds) in seconds, bounded;
// nil without a usable hint.
func (d pollBounds) hint(ms *float64) *float64 {
	if ms == nil || *ms <= 0 {
		return nil
	}
	v := time.Duration(*ms * float64(time.Millisecond))
	s := min(max(v, d.min), d.max).Seconds()
	return &s
}

// relatedTaskKey is the _meta key that ties a message to its task.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// withoutRelatedTask drops the related-task _meta the server adds to a
// tasks/result answer: the stored result is what the tool call itself would
// have returned. Anything else is kept as the server wrote it.
func withoutRelatedTask(raw json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return raw
	}
	metaRaw, ok := fields["_meta"]
	if !ok {
		return raw
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(metaRaw, &meta) != nil {
		return raw
	}
	if _, ok := meta[relatedTaskKey]; !ok {
		return raw
	}
	delete(meta, relatedTaskKey)
	if len(meta) == 0 {
		delete(fields, "_meta")
	} else {
		fields["_meta"], _ = json.Marshal(meta)
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return raw
	}
	return out
}

// toolErrorText is the first non-empty text block of a CallToolResult,
// bounded; "" when there is none.
func toolErrorText(raw json.RawMessage) string {
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(raw, &res)
	for _, b := range res.Content {
		if t := strings.TrimSpace(b.Text); b.Type == "text" && t != "" {
			return task.Truncate(t, task.MaxToolErrorDetailChars)
		}
	}
	return ""
}
