package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/host/dispatch"
	"github.com/antler-mcp/antler/host/settings"
	"github.com/antler-mcp/antler/host/task"
	"github.com/antler-mcp/antler/host/task/ordinary"
	"github.com/antler-mcp/antler/host/taskservice"
	"github.com/antler-mcp/antler/host/taskstore"
	"github.com/antler-mcp/antler/host/toolcache"
)

// Host tools agents get when the task runtime runs (DeerFlow's names).
const (
	ToolListTasks  = "list_background_tasks"
	ToolCancelTask = "cancel_background_task"
)

// hostTools are the two task tools in /api/mcp/tools form.
func hostTools() []toolcache.Tool {
	return []toolcache.Tool{
		{Name: ToolListTasks, Server: "antler", OriginalName: ToolListTasks,
			Description: "List the durable background tasks of this thread with their status.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":50,"description":"How many tasks (default 20)."}}}`)},
		{Name: ToolCancelTask, Server: "antler", OriginalName: ToolCancelTask,
			Description: "Cancel one active durable background task of this thread, by its task id or task name.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"The task id or task name; omit it when only one task is active."}}}`)},
	}
}

// toolResult is a CallToolResult carrying data as structured content and text.
func toolResult(v any) map[string]any {
	b, _ := json.Marshal(v)
	return map[string]any{"content": []map[string]string{{"type": "text", "text": string(b)}}, "structuredContent": v}
}

const runtimeOff = "The MCP task runtime is not initialized. Enable mcp_tasks in antler.yaml (with a SQL database) to use durable task tools."

// submitTask replaces a task_toolset submit tool's call: submit in the
// background and answer with the local task id.
func (s *Server) submitTask(c echo.Context, t toolcache.Tool, req CallRequest) error {
	if s.tasks == nil || !s.tasks.Running() {
		return c.JSON(http.StatusOK, errorResult(runtimeOff))
	}
	p := principalFrom(c)
	row, err := s.tasks.Submit(c.Request().Context(), ordinary.Name, task.SubmitRequest{
		UserID: s.callerUser(c, req.UserID), ThreadID: threadOrDefault(req.ThreadID), ServerName: t.Server,
		TaskName: t.TaskToolset.Name, Arguments: req.Arguments, Secrets: req.Secrets,
		DriverData: ordinary.DriverData(t.TaskToolset.SubmitTool, t.TaskToolset.StatusTool, t.TaskToolset.CancelTool),
	})
	if err != nil {
		s.log.Warn("MCP task submit failed", "request_id", requestIDFrom(c), "server", t.Server, "user", p.User, "error", dispatch.Redact(err.Error()))
		msg := err.Error()
		if dup := (*taskstore.DuplicateError)(nil); errors.As(err, &dup) {
			// Its text quotes the remote id, which agents never see.
			msg = "The remote MCP task is already tracked for server '" + dup.ServerName + "' by this user"
		}
		return c.JSON(http.StatusOK, errorResult(task.Truncate(dispatch.Redact(msg), task.MaxPublicErrorChars)))
	}
	return c.JSON(http.StatusOK, toolResult(map[string]any{
		"task_id": row.ID, "task_name": row.TaskName, "status": row.Status, "message": "Task is running in the background.",
	}))
}

func threadOrDefault(thread string) string {
	if thread == "" {
		return "default"
	}
	return thread
}

// callHostTool serves list_background_tasks and cancel_background_task.
func (s *Server) callHostTool(c echo.Context, name string, req CallRequest) error {
	if s.tasks == nil || !s.tasks.Running() {
		return c.JSON(http.StatusOK, errorResult(runtimeOff))
	}
	ctx := c.Request().Context()
	user, thread := s.callerUser(c, req.UserID), threadOrDefault(req.ThreadID)
	var args struct {
		Limit int    `json:"limit"`
		Task  string `json:"task"`
	}
	_ = json.Unmarshal(req.Arguments, &args)
	if name == ToolListTasks {
		limit := args.Limit
		if limit <= 0 {
			limit = 20
		}
		limit = min(limit, 50)
		rows, err := s.tasks.List(ctx, thread, user, limit, false)
		if err != nil {
			return err
		}
		items := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			items = append(items, s.taskItem(r))
		}
		return c.JSON(http.StatusOK, toolResult(map[string]any{"tasks": items, "count": len(items)}))
	}
	row, err := s.tasks.CancelMatching(ctx, thread, user, args.Task)
	var amb *taskservice.AmbiguousError
	switch {
	case errors.Is(err, taskservice.ErrNoMatch), errors.Is(err, taskservice.ErrGone), errors.As(err, &amb):
		return c.JSON(http.StatusOK, toolResult(map[string]any{"cancelled": false, "message": err.Error()}))
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, toolResult(map[string]any{
		"cancelled": row.Status == "cancelled", "task": s.taskItem(row),
		"message": "Cancellation requested. Antler will keep retrying safely if the remote server is temporarily unavailable.",
	}))
}

// neutralize keeps a task name (chosen by operators, shown to models) from
// forging prompt structure.
func neutralize(s string) string {
	return strings.NewReplacer("<", "‹", ">", "›").Replace(s)
}

func millis(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// taskItem is a task as listed: never its remote id, driver data or server.
func (s *Server) taskItem(r taskstore.Task) map[string]any {
	return map[string]any{
		"task_id": r.ID, "task_name": neutralize(r.TaskName), "status": r.Status,
		"created_at": millis(r.CreatedAt), "updated_at": millis(r.UpdatedAt),
		"error":             nullable(task.Truncate(r.Error, task.MaxPublicErrorChars)),
		"tracking_degraded": r.ConsecutivePollErrorCount >= s.tasks.TrackingDegradedAfter(),
		"cancel_requested":  !r.CancelRequestedAt.IsZero(),
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// taskDetail adds the fields of GET .../{task_id}.
func (s *Server) taskDetail(r taskstore.Task) map[string]any {
	d := s.taskItem(r)
	d["last_polled_at"] = millis(r.LastPolledAt)
	d["last_poll_error"] = nullable(task.Truncate(r.LastPollError, task.MaxPublicErrorChars))
	d["last_cancel_error"] = nullable(task.Truncate(r.LastCancelError, task.MaxPublicErrorChars))
	d["cancel_attempt_count"] = r.CancelAttemptCount
	d["notification_status"] = r.NotificationStatus
	d["notification_error"] = nullable(task.Truncate(r.NotificationError, task.MaxPublicErrorChars))
	d["notification_attempt_count"] = r.NotificationAttemptCount
	d["result"] = rawOrNull(r.Result)
	d["result_preview"] = nullable(r.ResultPreview)
	d["result_truncated"] = r.ResultTruncated
	d["result_artifact"] = rawOrNull(r.ResultArtifact)
	d["input_required"] = rawOrNull(r.InputRequired)
	return d
}

// taskScope checks the thread id and the runtime for the task endpoints.
func (s *Server) taskScope(c echo.Context) (user, thread string, ok bool, err error) {
	thread = c.Param("thread_id")
	if verr := settings.ValidateUserID(thread); verr != nil {
		return "", "", false, fail(c, http.StatusBadRequest, "thread_id: %v", verr)
	}
	if s.tasks == nil || !s.tasks.Running() {
		return "", "", false, fail(c, http.StatusServiceUnavailable, "MCP task service not available")
	}
	return principalFrom(c).User, thread, true, nil
}

func (s *Server) listTasks(c echo.Context) error {
	user, thread, ok, err := s.taskScope(c)
	if !ok {
		return err
	}
	limit := 50
	if v := c.QueryParam("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > 100 {
			return fail(c, http.StatusBadRequest, "limit: must be a whole number from 1 to 100")
		}
		limit = n
	}
	rows, err := s.tasks.List(c.Request().Context(), thread, user, limit, false)
	if err != nil {
		return err
	}
	items := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		items = append(items, s.taskItem(r))
	}
	return c.JSON(http.StatusOK, map[string]any{"tasks": items})
}

func (s *Server) getTask(c echo.Context) error {
	user, thread, ok, err := s.taskScope(c)
	if !ok {
		return err
	}
	row, err := s.tasks.Get(c.Request().Context(), c.Param("task_id"), user, thread)
	if errors.Is(err, taskstore.ErrNotFound) {
		return fail(c, http.StatusNotFound, "MCP task not found")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.taskDetail(row))
}

func (s *Server) cancelTask(c echo.Context) error {
	user, thread, ok, err := s.taskScope(c)
	if !ok {
		return err
	}
	row, err := s.tasks.Cancel(c.Request().Context(), c.Param("task_id"), user, thread)
	switch {
	case errors.Is(err, taskstore.ErrNotFound):
		return fail(c, http.StatusNotFound, "MCP task not found")
	case errors.Is(err, taskservice.ErrNotRunning):
		return fail(c, http.StatusServiceUnavailable, "MCP task service not available")
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, s.taskDetail(row))
}
