// Command benchupstream is one stdio MCP server that every task dialect can
// poll, for the driver benchmark: each answers a task that is still
// working, so one status poll is one round trip and the drivers' costs
// compare on the same process, transport and MCP library.
//
//	report_status {task_id} → {task_id, status: "running"}        (ordinary contract)
//	job_state     {job}     → {job, state: 1, progress, steps}     (the jobs API, for plugin drivers)
//	spec_job      {}        a 2025-11-25 task tool (execution.taskSupport optional,
//	                        served by mcp-go's task support): it works until the
//	                        server exits
//	ext_job       {}        with the 2026-07-28 extension declared on the call: a
//	                        task (resultType "task") that stays working
//
// tasks/get of an extension task (the extension declared in the request's
// _meta) is answered here; every other line goes to mcp-go. A client that
// negotiates 2026-07-28 sees the extension in server/discover; pin
// protocol_version 2025-11-25 for the 2025-11-25 dialect.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const extension = "io.modelcontextprotocol/tasks"

func main() {
	srv := server.NewMCPServer("benchupstream", "0.1.0", server.WithToolCapabilities(false),
		server.WithTaskCapabilities(false, true, true),
		server.WithExtensions(map[string]any{extension: map[string]any{}}))
	srv.AddTool(mcp.NewTool("report_status", mcp.WithString("task_id", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id := req.GetString("task_id", "")
			return mcp.NewToolResultStructured(map[string]any{"task_id": id, "status": "running"}, "running"), nil
		})
	srv.AddTool(mcp.NewTool("job_state", mcp.WithNumber("job", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			v := map[string]any{"job": req.GetInt("job", 0), "state": 1, "progress": 1, "steps": 3}
			return mcp.NewToolResultStructured(v, fmt.Sprint(v)), nil
		})
	srv.AddTool(mcp.NewTool("spec_job", mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {} // mcp-go ends the call's context once the task is created
		})
	srv.AddTool(mcp.NewTool("ext_job"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("ext_job runs as an extension task: declare " + extension), nil
	})

	out := &lineWriter{w: os.Stdout}
	pr, pw := io.Pipe()
	ext := &extTasks{created: time.Now().UTC().Format(time.RFC3339Nano)}
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			line, err := r.ReadBytes('\n')
			if resp, ok := ext.answer(bytes.TrimSpace(line)); ok {
				_, _ = out.Write(append(resp, '\n'))
			} else if len(bytes.TrimSpace(line)) > 0 {
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.Close()
				return
			}
		}
	}()
	stdio := server.NewStdioServer(srv)
	stdio.SetErrorLogger(log.New(os.Stderr, "benchupstream: ", 0))
	if err := stdio.Listen(context.Background(), pr, out); err != nil {
		log.Fatal(err)
	}
}

// lineWriter writes whole lines from mcp-go and from the extension layer.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// extTasks answers ext_job's calls and tasks/get of its tasks: every task
// is working.
type extTasks struct {
	mu      sync.Mutex
	next    int
	created string
}

func (x *extTasks) answer(line []byte) ([]byte, bool) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name   string `json:"name"`
			TaskID string `json:"taskId"`
			Meta   struct {
				Capabilities struct {
					Extensions map[string]json.RawMessage `json:"extensions"`
				} `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
		return nil, false
	}
	if _, declared := req.Params.Meta.Capabilities.Extensions[extension]; !declared {
		return nil, false
	}
	var id string
	switch {
	case req.Method == "tools/call" && req.Params.Name == "ext_job":
		x.mu.Lock()
		x.next++
		id = fmt.Sprintf("ext-%d", x.next)
		x.mu.Unlock()
	case req.Method == "tasks/get":
		id = req.Params.TaskID
	default:
		return nil, false
	}
	result := map[string]any{"resultType": "task", "taskId": id, "status": "working", "createdAt": x.created,
		"lastUpdatedAt": x.created, "ttlMs": 600000, "pollIntervalMs": 1000}
	if req.Method == "tasks/get" {
		result["resultType"] = "complete"
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	return b, true
}
