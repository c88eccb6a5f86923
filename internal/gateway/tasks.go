package gateway

import (
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/tasktools"
	"github.com/antler-mcp/antler/internal/workspace"
)

// Host tools agents get when the task runtime runs (DeerFlow's names).
const (
	ToolListTasks  = tasktools.ToolListTasks
	ToolCancelTask = tasktools.ToolCancelTask
)

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

// The task endpoints (/api/threads/{thread_id}/mcp-tasks...): the views and
// their refusals are the task runtime's (taskservice).

// taskScope checks the thread id and the runtime for the task endpoints.
func (s *Server) taskScope(c echo.Context) (user, thread string, err error) {
	thread = c.Param("thread_id")
	if verr := workspace.CheckID(thread); verr != nil {
		return "", "", apierror.New(http.StatusBadRequest, "thread_id: %v", verr)
	}
	if s.tasks == nil || !s.tasks.Running() {
		return "", "", apierror.New(http.StatusServiceUnavailable, taskservice.Unavailable)
	}
	return principalFrom(c).User, thread, nil
}

// taskAnswer writes a task view.
func taskAnswer(c echo.Context, view map[string]any, err error) error {
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, view)
}

func (s *Server) listTasks(c echo.Context) error {
	user, thread, err := s.taskScope(c)
	if err != nil {
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
	view, err := s.tasks.ListView(c.Request().Context(), task.Scope{User: user, Thread: thread}, limit)
	return taskAnswer(c, view, err)
}

func (s *Server) getTask(c echo.Context) error {
	user, thread, err := s.taskScope(c)
	if err != nil {
		return err
	}
	view, err := s.tasks.DetailView(c.Request().Context(), c.Param("task_id"), task.Scope{User: user, Thread: thread})
	return taskAnswer(c, view, err)
}

func (s *Server) cancelTask(c echo.Context) error {
	user, thread, err := s.taskScope(c)
	if err != nil {
		return err
	}
	view, err := s.tasks.CancelView(c.Request().Context(), c.Param("task_id"), task.Scope{User: user, Thread: thread})
	return taskAnswer(c, view, err)
}

// answerTask records the caller's answer to their task waiting for input
// (see taskservice.Service.AnswerView). The answer's content is the user's
// data: no response or log line quotes it.
func (s *Server) answerTask(c echo.Context) error {
	user, thread, err := s.taskScope(c)
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	a, err := taskservice.DecodeAnswer(raw)
	if err != nil {
		return err
	}
	view, err := s.tasks.AnswerView(c.Request().Context(), c.Param("task_id"), task.Scope{User: user, Thread: thread}, a)
	return taskAnswer(c, view, err)
}
