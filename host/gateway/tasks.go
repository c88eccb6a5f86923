package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/host/apierror"
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
	d["answer"] = s.answerView(r)
	return d
}

// answerView is the state of a task's latest answer, never its content:
// null when the task never had one, else {status: pending|delivered|
// refused|abandoned, recorded_at, last_error}, and can_answer whether the
// task's driver takes answers at all.
func (s *Server) answerView(r taskstore.Task) map[string]any {
	v := map[string]any{"can_answer": s.tasks.CanAnswer(r), "status": nil, "recorded_at": nil, "last_error": nil}
	if r.AnswerStatus != "" {
		v["status"] = r.AnswerStatus
		v["recorded_at"] = tasktools.Timestamp(r.AnswerRecordedAt)
		v["last_error"] = tasktools.Nullable(task.Truncate(r.AnswerError, task.MaxPublicErrorChars))
	}
	return v
}

// taskScope checks the thread id and the runtime for the task endpoints.
func (s *Server) taskScope(c echo.Context) (user, thread string, ok bool, err error) {
	thread = c.Param("thread_id")
	if verr := settings.ValidateUserID(thread); verr != nil {
		return "", "", false, apierror.New(http.StatusBadRequest, "thread_id: %v", verr)
	}
	if s.tasks == nil || !s.tasks.Running() {
		return "", "", false, apierror.New(http.StatusServiceUnavailable, "MCP task service not available")
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
			return apierror.New(http.StatusBadRequest, "limit: must be a whole number from 1 to 100")
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
		return apierror.New(http.StatusNotFound, "MCP task not found")
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
		return apierror.New(http.StatusNotFound, "MCP task not found")
	case errors.Is(err, taskservice.ErrNotRunning):
		return apierror.New(http.StatusServiceUnavailable, "MCP task service not available")
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, s.taskDetail(row))
}

// answerBody is the body of POST .../{task_id}/input: an elicitation
// result's shape.
type answerBody struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content"`
}

// answerTask records the caller's answer to their task waiting for input
// (see taskservice.Service.Answer) and returns the task, now working with
// the answer pending. The answer's content is the user's data: no response
// or log line quotes it.
func (s *Server) answerTask(c echo.Context) error {
	user, thread, ok, err := s.taskScope(c)
	if !ok {
		return err
	}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	var body answerBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || dec.More() {
		return apierror.New(http.StatusBadRequest, `body: must be one JSON object {"action": "accept"|"decline"|"cancel", "content": {...}}`)
	}
	a := task.Answer{Action: body.Action, Content: body.Content}
	if err := a.Validate(); err != nil {
		return apierror.New(http.StatusBadRequest, "%s", err.Error()) // names the field, never the content
	}
	row, err := s.tasks.Answer(c.Request().Context(), c.Param("task_id"), user, thread, a)
	var nir *taskstore.NotInputRequiredError
	switch {
	case errors.Is(err, taskstore.ErrNotFound):
		return apierror.New(http.StatusNotFound, "MCP task not found")
	case errors.Is(err, taskservice.ErrNotRunning):
		return apierror.New(http.StatusServiceUnavailable, "MCP task service not available")
	case errors.Is(err, taskservice.ErrCannotAnswer):
		return apierror.New(http.StatusUnprocessableEntity, "%s", err.Error())
	case errors.Is(err, taskstore.ErrAnswerPending):
		return apierror.New(http.StatusConflict, "An answer to this MCP task is already pending delivery; wait for it to be delivered")
	case errors.As(err, &nir):
		return apierror.New(http.StatusConflict, "%s", nir.Error())
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, s.taskDetail(row))
}
