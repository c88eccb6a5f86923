package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/host/dispatch"
	"github.com/antler-mcp/antler/host/settings"
	"github.com/antler-mcp/antler/host/task"
	"github.com/antler-mcp/antler/host/taskservice"
	"github.com/antler-mcp/antler/host/taskstore"
	"github.com/antler-mcp/antler/host/tasktools"
	"github.com/antler-mcp/antler/host/toolcache"
)

// Host tools agents get when the task runtime runs (DeerFlow's names).
const (
	ToolListTasks  = tasktools.ToolListTasks
	ToolCancelTask = tasktools.ToolCancelTask
)

// submitTask replaces a task_toolset submit tool's call (see tasktools).
func (s *Server) submitTask(c echo.Context, t toolcache.Tool, req CallRequest) error {
	res, err := s.taskTools.Submit(c.Request().Context(), t, s.taskCall(c, req))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// callHostTool serves list_background_tasks and cancel_background_task.
func (s *Server) callHostTool(c echo.Context, name string, req CallRequest) error {
	res, err := s.taskTools.CallHostTool(c.Request().Context(), name, s.taskCall(c, req))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// taskCall is a REST call body as the task tools take it.
func (s *Server) taskCall(c echo.Context, req CallRequest) dispatch.Request {
	return dispatch.Request{UserID: s.callerUser(c, req.UserID), ThreadID: req.ThreadID, Arguments: req.Arguments, Secrets: req.Secrets}
}

// taskItem is a task as listed (see tasktools.Tools.Item).
func (s *Server) taskItem(r taskstore.Task) map[string]any { return s.taskTools.Item(r) }

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// taskDetail adds the fields of GET .../{task_id}.
func (s *Server) taskDetail(r taskstore.Task) map[string]any {
	d := s.taskItem(r)
	d["last_polled_at"] = tasktools.Timestamp(r.LastPolledAt)
	d["last_poll_error"] = tasktools.Nullable(task.Truncate(r.LastPollError, task.MaxPublicErrorChars))
	d["last_cancel_error"] = tasktools.Nullable(task.Truncate(r.LastCancelError, task.MaxPublicErrorChars))
	d["cancel_attempt_count"] = r.CancelAttemptCount
	d["notification_status"] = r.NotificationStatus
	d["notification_error"] = tasktools.Nullable(task.Truncate(r.NotificationError, task.MaxPublicErrorChars))
	d["notification_attempt_count"] = r.NotificationAttemptCount
	d["result"] = rawOrNull(r.Result)
	d["result_preview"] = tasktools.Nullable(r.ResultPreview)
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
