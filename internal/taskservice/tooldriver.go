package taskservice

import (
	"context"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/task/spectasks"
	"github.com/antler-mcp/antler/internal/taskplugin"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// SubmitTool submits the durable task a call of tool stands for, through
// the driver the tool names (see DriverName and SubmitRequest).
func (s *Service) SubmitTool(ctx context.Context, tool toolcache.Tool, call dispatch.Request) (taskstore.Task, error) {
	return s.Submit(ctx, DriverName(tool), SubmitRequest(tool, call))
}

// DefaultThread is the thread of a call that names none.
const DefaultThread = "default"

// SubmitRequest is the durable task a call of tool (a task_toolset submit
// tool, or a tool its server runs as an MCP task) stands for: the same on
// every door and in every task dialect. An MCP task tool's task is named
// after the tool as agents see it; a call that names no thread is in
// DefaultThread.
func SubmitRequest(tool toolcache.Tool, call dispatch.Request) task.SubmitRequest {
	req := task.SubmitRequest{
		UserID: call.UserID, ThreadID: call.ThreadID, ServerName: tool.Server,
		Arguments: call.Arguments, Secrets: call.Secrets,
	}
	if req.ThreadID == "" {
		req.ThreadID = DefaultThread
	}
	if tool.TaskToolset != nil {
		req.TaskName = tool.TaskToolset.Name
		req.DriverData = ordinary.DriverData(tool.TaskToolset.SubmitTool, tool.TaskToolset.StatusTool, tool.TaskToolset.CancelTool)
		if r := tool.TaskToolset.RespondTool; r != "" {
			req.DriverData[ordinary.RespondToolKey] = r
		}
		return req
	}
	req.TaskName = tool.Name
	req.DriverData = spectasks.DriverData(tool.OriginalName, tool.TaskTTL)
	return req
}

// DriverName is the task driver of a durable tool: its task toolset's
// (a plugin driver, or the ordinary one), or the MCP tasks driver of the
// revision its server speaks.
func DriverName(tool toolcache.Tool) string {
	switch {
	case tool.TaskToolset != nil:
		return taskplugin.DriverName(tool.Server, tool.TaskToolset)
	case tool.ServerDriver:
		return taskplugin.ServerDriverName(tool.Server)
	case tool.TaskExtension:
		return spectasks.ExtensionName
	}
	return spectasks.Name
}
