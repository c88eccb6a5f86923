package spectasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/antler-mcp/antler/internal/task"
)

// The 2026-07-28 tasks extension (SEP-2663, io.modelcontextprotocol/tasks):
// a server that declares it decides per tools/call whether to answer with a
// task (resultType "task") or with the tool's result. tasks/get inlines the
// result, the JSON-RPC error or the outstanding inputRequests; tasks/update
// delivers inputResponses; tasks/cancel is a cooperative acknowledgement.
// There is no tasks/result and no session: every request declares the
// extension in its own _meta, and over streamable HTTP carries Mcp-Name
// (the upstream connection sets it from params.taskId).

// ExtensionName is the 2026-07-28 driver's registry name.
const ExtensionName = "mcp-tasks-2026-07-28"

// Extension is the extension's identifier.
const Extension = "io.modelcontextprotocol/tasks"

// MethodUpdate delivers input responses (2026-07-28 only).
const MethodUpdate = "tasks/update"

// CodeMissingCapability is -32021, Missing Required Client Capability: the
// server can only answer with a task and the request did not declare the
// extension.
const CodeMissingCapability = -32021

// InlinePrefix starts the remote id of a task whose tools/call the server
// answered with the tool's result: there is no remote task, and the
// durable one is completed when it is created.
const InlinePrefix = "inline:"

// AnsweredPrefix starts the driver data keys of the input requests the
// driver answered: "answered:<input request key>" is the answer's id. A
// server may still list an answered request until it has applied the
// update (the acknowledgement is eventually consistent); it is not asked
// again.
const AnsweredPrefix = "answered:"

// ErrUnanswerable is wrapped by Answer when the task's question is not one
// an elicitation answer can fulfil (no pending elicitation/create request).
var ErrUnanswerable = errors.New("the remote MCP task asks for no input an answer can give")

// clientMeta is the per-request _meta that declares the extension.
func clientMeta() map[string]any {
	return map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"extensions": map[string]any{Extension: map[string]any{}},
	}}
}

// ExtensionDriver is the 2026-07-28 tasks extension driver. Like Driver it
// keeps no state between calls: a task's input requests already answered
// are in its driver data.
type ExtensionDriver struct {
	caller Caller
	polls  pollBounds
}

var (
	_ task.Driver   = (*ExtensionDriver)(nil)
	_ task.Answerer = (*ExtensionDriver)(nil)
)

// NewExtension returns a 2026-07-28 driver that sends through caller, with
// the server's pollIntervalMs bounded as opts say.
func NewExtension(caller Caller, opts Options) *ExtensionDriver {
	return &ExtensionDriver{caller: caller, polls: newPollBounds(opts)}
}

// extTask is the extension's Task, or a DetailedTask with its inlined
// fields.
type extTask struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	PollIntervalMs *float64                   `json:"pollIntervalMs"`
	Result         json.RawMessage            `json:"result"`
	Error          *extError                  `json:"error"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
}

type extError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Submit calls the tool declaring the extension. A task handle becomes the
// remote task; a plain result makes a task completed at once (remote id
// InlinePrefix and the local id), its result the tool's, isError included.
func (d *ExtensionDriver) Submit(ctx context.Context, req task.SubmitRequest) (task.Submission, error) {
	if err := req.Validate(); err != nil {
		return task.Submission{}, err
	}
	tool := req.DriverData[ToolKey]
	if tool == "" {
		return task.Submission{}, task.Protocolf("Task driver_data is missing required '%s'", ToolKey)
	}
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	reply, err := d.caller.Call(ctx, Call{
		Server: req.ServerName, UserID: req.UserID, ThreadID: req.ThreadID,
		Method: MethodCallTool, Tool: tool, Arguments: args, Meta: clientMeta(),
		RequestScoped: true, Secrets: req.Secrets,
	})
	if err != nil {
		return task.Submission{}, fmt.Errorf("MCP task tool '%s' call failed: %w", tool, err)
	}
	var res extTask
	if err := json.Unmarshal(reply.Result, &res); err != nil {
		return task.Submission{}, task.Protocolf("MCP task tool '%s' returned a malformed result: %w", tool, err)
	}
	data := maps.Clone(req.DriverData)
	switch res.ResultType {
	case "", "complete":
		if req.LocalTaskID == "" {
			return task.Submission{}, task.NewProtocolError("an MCP tool answered inline needs the task's local id")
		}
		return task.Submission{RemoteTaskID: InlinePrefix + req.LocalTaskID, DriverData: data,
			State: task.State{Status: task.StatusCompleted, Result: withoutResultType(reply.Result)}}, nil
	case "task":
	default:
		return task.Submission{}, task.Protocolf("MCP tool '%s' answered with an unexpected resultType %q", tool, task.Truncate(res.ResultType, 64))
	}
	if strings.TrimSpace(res.TaskID) == "" {
		return task.Submission{}, task.Protocolf("MCP task tool '%s' created a task without a taskId", tool)
	}
	ref := task.Reference{LocalTaskID: req.LocalTaskID, ServerName: req.ServerName, UserID: req.UserID, ThreadID: req.ThreadID,
		RemoteTaskID: res.TaskID, DriverData: data}
	var snap task.State
	if res.Status == "working" {
		snap = task.State{Status: task.StatusWorking, PollAfterSeconds: d.polls.hint(res.PollIntervalMs)}
	} else if snap, err = d.Status(ctx, ref); err != nil {
		// A seed in another status has none of its payload: read it.
		return task.Submission{}, err
	}
	snap.DriverData = nil
	return task.Submission{RemoteTaskID: res.TaskID, State: snap, DriverData: data}, nil
}

// Status reads the task with tasks/get and maps the DetailedTask.
func (d *ExtensionDriver) Status(ctx context.Context, ref task.Reference) (task.State, error) {
	s, err := d.status(ctx, ref)
	return task.ScrubRemoteID(s, err, ref.RemoteTaskID)
}

func (d *ExtensionDriver) status(ctx context.Context, ref task.Reference) (task.State, error) {
	if strings.HasPrefix(ref.RemoteTaskID, InlinePrefix) {
		return task.State{}, task.NewProtocolError("An MCP tool answered inline has no remote task to read")
	}
	rt, err := d.get(ctx, ref)
	if err != nil {
		return task.State{}, err
	}
	return d.snapshot(ref, rt)
}

// Cancel sends tasks/cancel, an acknowledgement only, and reads the task
// again: it reports the state the task ends in, or a retryable error while
// the server has not ended it yet (the service then asks again). A server
// that does not know the task (-32602) is read to say so.
func (d *ExtensionDriver) Cancel(ctx context.Context, ref task.Reference) (task.State, error) {
	s, err := d.cancel(ctx, ref)
	return task.ScrubRemoteID(s, err, ref.RemoteTaskID)
}

func (d *ExtensionDriver) cancel(ctx context.Context, ref task.Reference) (task.State, error) {
	if strings.HasPrefix(ref.RemoteTaskID, InlinePrefix) {
		return task.State{}, task.NewProtocolError("An MCP tool answered inline has no remote task to cancel")
	}
	_, err := d.caller.Call(ctx, d.taskCall(ref, MethodCancel, nil))
	var rpc *RPCError
	if err != nil && !(errors.As(err, &rpc) && rpc.Code == CodeInvalidParams) {
		return task.State{}, classify(MethodCancel, err)
	}
	s, err := d.status(ctx, ref)
	if err != nil {
		return task.State{}, err
	}
	if !s.Status.IsTerminal() {
		return task.State{}, fmt.Errorf("MCP task is still %s after tasks/cancel (cancellation is cooperative)", s.Status)
	}
	return s, nil
}

// Answer delivers a to the input request the question names with
// tasks/update, its key (unique over the task's life) the update's
// idempotency: the extension has servers ignore responses to requests that
// are no longer outstanding, so a resent update applies once. An answer
// the task's driver data already records as delivered is not sent again.
// The snapshot is the task read afterwards, its driver data recording the
// answered key.
func (d *ExtensionDriver) Answer(ctx context.Context, ref task.Reference, question json.RawMessage, a task.Answer) (task.State, error) {
	s, err := d.answer(ctx, ref, question, a)
	return task.ScrubRemoteID(s, err, ref.RemoteTaskID)
}

func (d *ExtensionDriver) answer(ctx context.Context, ref task.Reference, question json.RawMessage, a task.Answer) (task.State, error) {
	var q struct {
		Key string `json:"input_request_id"`
	}
	if json.Unmarshal(question, &q) != nil || q.Key == "" {
		return task.State{}, ErrUnanswerable
	}
	resp := map[string]any{"action": a.Action}
	switch a.Action {
	case "accept":
		if len(a.Content) > 0 && string(a.Content) != "null" {
			resp["content"] = a.Content
		}
	case "decline", "cancel":
	default:
		return task.State{}, fmt.Errorf("an MCP task answer's action must be accept, decline or cancel, not %q", task.Truncate(a.Action, 32))
	}
	data := maps.Clone(ref.DriverData)
	if data == nil {
		data = map[string]string{}
	}
	key := AnsweredPrefix + q.Key
	if prev, done := data[key]; !done || prev != a.ID {
		if done {
			return task.State{}, fmt.Errorf("%w: its input request %q was answered already", ErrUnanswerable, task.Truncate(q.Key, 64))
		}
		if _, err := d.caller.Call(ctx, d.taskCall(ref, MethodUpdate, map[string]any{"inputResponses": map[string]any{q.Key: resp}})); err != nil {
			return task.State{}, classify(MethodUpdate, err)
		}
		data[key] = a.ID
	}
	ref.DriverData = data
	s, err := d.status(ctx, ref)
	if err != nil {
		return task.State{}, err
	}
	s.DriverData = data
	return s, nil
}

// taskCall is a tasks/* request for ref's task, declaring the extension.
func (d *ExtensionDriver) taskCall(ref task.Reference, method string, extra map[string]any) Call {
	p := map[string]any{"taskId": ref.RemoteTaskID, "_meta": clientMeta()}
	maps.Copy(p, extra)
	params, _ := json.Marshal(p)
	return Call{Server: ref.ServerName, UserID: ref.UserID, ThreadID: ref.ThreadID,
		Method: method, Params: params, Session: ref.DriverData[SessionKey]}
}

// get sends tasks/get and checks the task it answers with.
func (d *ExtensionDriver) get(ctx context.Context, ref task.Reference) (extTask, error) {
	reply, err := d.caller.Call(ctx, d.taskCall(ref, MethodGet, nil))
	if err != nil {
		return extTask{}, classify(MethodGet, err)
	}
	var rt extTask
	if err := json.Unmarshal(reply.Result, &rt); err != nil {
		return extTask{}, task.Protocolf("MCP %s returned a malformed task: %w", MethodGet, err)
	}
	if rt.TaskID != ref.RemoteTaskID {
		return extTask{}, task.NewProtocolError("MCP task response taskId does not match the persisted remote task")
	}
	return rt, nil
}

// classify is the fate of a failed tasks/* request, as for the 2025-11-25
// driver: a forgotten session and any JSON-RPC error but an internal one
// fail the task for good, everything else is retried.
func classify(method string, err error) error {
	if errors.Is(err, ErrSessionGone) {
		return task.Protocolf("Remote MCP task was lost: %w", err)
	}
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code == CodeInternal {
		return fmt.Errorf("MCP %s failed: %w", method, err)
	}
	return task.Protocolf("Remote MCP task was not found or refused %s: %s", method, task.Truncate(rpc.Message, task.MaxToolErrorDetailChars))
}

// snapshot maps a DetailedTask to the normalised model: completed is the
// inlined result, an isError one included (the extension keeps failed for
// JSON-RPC errors); failed the inlined error; input_required the first
// outstanding elicitation not answered yet.
func (d *ExtensionDriver) snapshot(ref task.Reference, rt extTask) (task.State, error) {
	poll := d.polls.hint(rt.PollIntervalMs)
	tool := ref.DriverData[ToolKey]
	switch rt.Status {
	case "working":
		return task.State{Status: task.StatusWorking, PollAfterSeconds: poll}, nil
	case "input_required":
		q, ok := question(rt, ref.DriverData)
		if !ok {
			// Every request listed is one already answered: the server has
			// not applied the update yet.
			return task.State{Status: task.StatusWorking, PollAfterSeconds: poll}, nil
		}
		return task.State{Status: task.StatusInputRequired, InputRequired: q, PollAfterSeconds: poll}, nil
	case "completed":
		if len(rt.Result) == 0 || string(rt.Result) == "null" {
			return task.State{}, task.NewProtocolError("MCP task is completed without its result")
		}
		return task.State{Status: task.StatusCompleted, Result: withoutResultType(rt.Result)}, nil
	case "failed":
		msg := rt.StatusMessage
		if rt.Error != nil && rt.Error.Message != "" {
			msg = rt.Error.Message
		}
		if msg == "" {
			msg = "no error given"
		}
		return task.State{Status: task.StatusFailed, Error: fmt.Sprintf("MCP tool '%s' failed: %s", tool, msg)}, nil
	case "cancelled":
		return task.State{Status: task.StatusCancelled, Error: rt.StatusMessage}, nil
	}
	return task.State{}, task.Protocolf("MCP task has an unknown status %q", task.Truncate(rt.Status, 64))
}

// question is the input_required payload of rt: the first (by key)
// outstanding elicitation/create request the driver has not answered, its
// params as the server wrote them plus "input_request_id" (the key an
// answer goes to) and "method". Without one but with other requests
// (sampling, roots), the payload only says what is asked, and Answer
// refuses it. ok is false when every request listed was answered.
func question(rt extTask, data map[string]string) (json.RawMessage, bool) {
	var pending []string
	for k := range rt.InputRequests {
		if _, done := data[AnsweredPrefix+k]; !done {
			pending = append(pending, k)
		}
	}
	if len(pending) == 0 && len(rt.InputRequests) > 0 {
		return nil, false
	}
	slices.Sort(pending)
	var methods []string
	for _, k := range pending {
		var r struct {
			Method string                     `json:"method"`
			Params map[string]json.RawMessage `json:"params"`
		}
		if json.Unmarshal(rt.InputRequests[k], &r) != nil {
			continue
		}
		if r.Method != "elicitation/create" || r.Params == nil {
			methods = append(methods, r.Method)
			continue
		}
		q := r.Params
		q["input_request_id"], _ = json.Marshal(k)
		q["method"], _ = json.Marshal(r.Method)
		if _, ok := q["message"]; !ok || rt.StatusMessage != "" && string(q["message"]) == `""` {
			q["message"], _ = json.Marshal(orDefault(rt.StatusMessage))
		}
		b, err := json.Marshal(q)
		if err == nil {
			return b, true
		}
	}
	msg := orDefault(rt.StatusMessage)
	if len(methods) > 0 {
		msg += " (it asks for " + strings.Join(methods, ", ") + ", which Antler cannot answer)"
	}
	b, _ := json.Marshal(map[string]string{"message": msg})
	return b, true
}

func orDefault(msg string) string {
	if msg == "" {
		return "The remote MCP task needs input."
	}
	return msg
}

// withoutResultType drops the resultType discriminator from a result: the
// stored result is the tool's CallToolResult.
func withoutResultType(raw json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return raw
	}
	if _, ok := fields["resultType"]; !ok {
		return raw
	}
	delete(fields, "resultType")
	out, err := json.Marshal(fields)
	if err != nil {
		return raw
	}
	return out
}
