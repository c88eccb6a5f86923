// Package tasktools is what a door (the REST API or the MCP endpoint) does
// with the durable-task tools agents call: a task_toolsets submit tool
// becomes a background task with a local id, and the two host tools list and
// cancel the thread's tasks. Both doors call it, so a task started through
// either behaves the same; each door only resolves the caller first.
package tasktools

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// Host tools agents get when the task runtime runs (DeerFlow's names).
const (
	ToolListTasks  = "list_background_tasks"
	ToolCancelTask = "cancel_background_task"
)

// DefaultThread is the thread of a call that names none.
const DefaultThread = taskservice.DefaultThread

// RuntimeOff is the model-safe answer while the task runtime is not running.
const RuntimeOff = "The MCP task runtime is not initialized. Enable mcp_tasks in antler.yaml (with a SQL database) to use durable task tools."

// IsHostTool reports whether name is one of the two host tools.
func IsHostTool(name string) bool { return name == ToolListTasks || name == ToolCancelTask }

// HostTools are the two task tools in /api/mcp/tools form.
func HostTools() []toolcache.Tool {
	return []toolcache.Tool{
		{Name: ToolListTasks, Server: "antler", OriginalName: ToolListTasks,
			Description: "List the durable background tasks of this thread with their status.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":50,"description":"How many tasks (default 20)."}}}`)},
		{Name: ToolCancelTask, Server: "antler", OriginalName: ToolCancelTask,
			Description: "Cancel one active durable background task of this thread, by its task id or task name.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"The task id or task name; omit it when only one task is active."}}}`)},
	}
}

// thread is a call's thread: the request's, or DefaultThread.
func thread(req dispatch.Request) string {
	if req.ThreadID == "" {
		return DefaultThread
	}
	return req.ThreadID
}

// Result is a CallToolResult as a JSON object.
type Result = map[string]any

// ErrorResult is a model-safe tool failure in CallToolResult shape.
func ErrorResult(msg string) Result {
	return Result{
		"content": []map[string]string{{"type": "text", "text": msg}},
		"isError": true,
	}
}

// StructuredResult is a CallToolResult carrying v as structured content and
// as its JSON text.
func StructuredResult(v any) Result {
	b, _ := json.Marshal(v)
	return Result{"content": []map[string]string{{"type": "text", "text": string(b)}}, "structuredContent": v}
}

// Tools serves the task tools over a task runtime (nil: mcp_tasks is off).
type Tools struct {
	svc *taskservice.Service
	log *slog.Logger
}

// New returns the task tools of svc (which may be nil).
func New(svc *taskservice.Service, log *slog.Logger) *Tools {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tools{svc: svc, log: log}
}

// Configured reports whether a task runtime exists (running or not): the
// host tools are then answered, with RuntimeOff while it is stopped.
func (t *Tools) Configured() bool { return t != nil && t.svc != nil }

// Running reports whether the task runtime runs: only then are the host
// tools listed.
func (t *Tools) Running() bool { return t.Configured() && t.svc.Running() }

// Listed returns the host tools when the runtime runs, else nil.
func (t *Tools) Listed() []toolcache.Tool {
	if !t.Running() {
		return nil
	}
	return HostTools()
}

// Submit replaces a task_toolset submit tool's call: it submits in the
// background and answers with the local task id. call is the door's
// request with the caller resolved: the user it acts for (after the door's
// user_id rule), its thread ("" is DefaultThread), arguments and secrets.
// A failure the agent can act on is an error result; err is an internal
// failure only.
func (t *Tools) Submit(ctx context.Context, tool toolcache.Tool, call dispatch.Request) (Result, error) {
	if !t.Running() {
		return ErrorResult(RuntimeOff), nil
	}
	row, err := t.svc.SubmitTool(ctx, tool, call)
	if err != nil {
		t.log.Warn("MCP task submit failed", "server", tool.Server, "user", call.UserID, "error", dispatch.Redact(err.Error()))
		return ErrorResult(SubmitFailure(err)), nil
	}
	out := map[string]any{
		"task_id": row.ID, "task_name": row.TaskName, "status": string(row.Status), "message": "Task is running in the background.",
	}
	if row.Status == task.StatusCompleted && row.Result != nil {
		// A server of the 2026-07-28 tasks extension answered the call
		// without a task: the result is here at once.
		out["message"], out["result"] = "Task completed at once.", row.Result
	}
	return StructuredResult(out), nil
}

// ErrSubmitFailed stands, on a door's span, for the failure an error result
// of Submit reports to the model (the runtime is off, or the submit failed).
var ErrSubmitFailed = errors.New("MCP task submit failed")

// SpanError is the error a door's span around Submit ends with: err, or
// ErrSubmitFailed when res is an error result, so that the span records the
// submit as failed although the model is answered with a result.
func SpanError(res Result, err error) error {
	if err == nil && res["isError"] == true {
		return ErrSubmitFailed
	}
	return err
}

// SubmitRequest is taskservice.SubmitRequest, for the doors that submit
// themselves.
func SubmitRequest(tool toolcache.Tool, call dispatch.Request) task.SubmitRequest {
	return taskservice.SubmitRequest(tool, call)
}

// DriverName is taskservice.DriverName.
func DriverName(tool toolcache.Tool) string { return taskservice.DriverName(tool) }

// SubmitFailure is the model-safe text of a failed submit: redacted,
// truncated, and never the remote task id.
func SubmitFailure(err error) string {
	msg := err.Error()
	if dup := (*taskstore.DuplicateError)(nil); errors.As(err, &dup) {
		// Its text quotes the remote id, which agents never see.
		msg = "The remote MCP task is already tracked for server '" + dup.ServerName + "' by this user"
	}
	return task.Truncate(dispatch.Redact(msg), task.MaxPublicErrorChars)
}

// CallHostTool serves list_background_tasks and cancel_background_task in
// the caller's thread.
func (t *Tools) CallHostTool(ctx context.Context, name string, call dispatch.Request) (Result, error) {
	if !t.Running() {
		return ErrorResult(RuntimeOff), nil
	}
	user, thread := call.UserID, thread(call)
	var args struct {
		Limit int    `json:"limit"`
		Task  string `json:"task"`
	}
	_ = json.Unmarshal(call.Arguments, &args)
	if name == ToolListTasks {
		limit := args.Limit
		if limit <= 0 {
			limit = 20
		}
		limit = min(limit, 50)
		rows, err := t.svc.List(ctx, task.Scope{User: user, Thread: thread}, limit, false)
		if err != nil {
			return nil, err
		}
		items := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			items = append(items, t.svc.Item(r))
		}
		return StructuredResult(map[string]any{"tasks": items, "count": len(items)}), nil
	}
	row, err := t.svc.CancelMatching(ctx, task.Scope{User: user, Thread: thread}, args.Task)
	var amb *taskservice.AmbiguousError
	switch {
	case errors.Is(err, taskservice.ErrNoMatch), errors.Is(err, taskservice.ErrGone), errors.As(err, &amb):
		return StructuredResult(map[string]any{"cancelled": false, "message": err.Error()}), nil
	case err != nil:
		return nil, err
	}
	return StructuredResult(map[string]any{
		"cancelled": row.Status == "cancelled", "task": t.svc.Item(row),
		"message": "Cancellation requested. Antler will keep retrying safely if the remote server is temporarily unavailable.",
	}), nil
}
