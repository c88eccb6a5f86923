package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"time"

	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskplugin"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// pluginTask runs a task driver's submit, then its status until the task
// ends (or --polls), against a live server of an extensions config: the
// driver's call_tool goes through the same tool cache and credential chain
// as in the host. Each answer is printed as one JSON line.
func pluginTask(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugin task", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "extensions config with the server (its task toolset's tool names become driver_data)")
	server := fs.String("server", "", "the server the task runs on")
	arguments := fs.String("arguments", "{}", "the submit tool's arguments, a JSON object")
	kind := fs.String("kind", plugins.KindWasm, `the driver's carrier: "wasm" or "process"`)
	polls := fs.Int("polls", 30, "status polls at most")
	interval := fs.Duration("interval", time.Second, "time between polls")
	user := fs.String("user", "plugin-test", "the task's user id")
	thread := fs.String("thread", "plugin-test", "the task's thread id")
	pos, err := parseInterspersed(fs, args)
	if err != nil || len(pos) != 1 || *cfgPath == "" || *server == "" {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "error:", err); return 1 }
	ctx := context.Background()
	cache := toolcache.New(toolcache.Options{ConfigPath: *cfgPath})
	defer cache.Close()
	snap, err := cache.Load(ctx)
	if err != nil {
		return fail(err)
	}
	req := task.SubmitRequest{UserID: *user, ThreadID: *thread, ServerName: *server, TaskName: "plugin test",
		Arguments: json.RawMessage(*arguments), LocalTaskID: task.LocalID(), DriverData: map[string]string{}}
	for _, t := range snap.Tools {
		if t.Server == *server && t.TaskToolset != nil {
			req.TaskName = t.TaskToolset.Name
			req.DriverData = ordinary.DriverData(t.TaskToolset.SubmitTool, t.TaskToolset.StatusTool, t.TaskToolset.CancelTool)
			break
		}
	}
	host, err := plugins.NewHost("", nil)
	if err != nil {
		return fail(err)
	}
	defer host.Close(ctx)
	path, _ := filepath.Abs(pos[0])
	p, err := host.LoadDriver(ctx, plugins.Entry{Name: filepath.Base(path), Kind: *kind, Path: path})
	if err != nil {
		return fail(err)
	}
	defer p.Close()
	d := taskplugin.New(p, taskservice.CacheCaller{Cache: cache}, nil)
	enc := json.NewEncoder(stdout)
	sub, err := d.Submit(ctx, req)
	if err != nil {
		return fail(fmt.Errorf("submit: %w", err))
	}
	_ = enc.Encode(map[string]any{"op": "submit", "remote_task_id": sub.RemoteTaskID, "status": sub.State.Status, "driver_data": sub.DriverData})
	data := maps.Clone(req.DriverData)
	maps.Copy(data, sub.DriverData)
	ref := task.Reference{LocalTaskID: req.LocalTaskID, UserID: *user, ThreadID: *thread, ServerName: *server,
		RemoteTaskID: sub.RemoteTaskID, DriverData: data}
	for i := 0; i < *polls; i++ {
		time.Sleep(*interval)
		s, err := d.Status(ctx, ref)
		if err != nil {
			_ = enc.Encode(map[string]any{"op": "status", "error": err.Error(), "permanent": task.IsPermanent(err)})
			if task.IsPermanent(err) {
				return 1
			}
			continue
		}
		_ = enc.Encode(map[string]any{"op": "status", "status": s.Status, "result": s.Result, "error": s.Error, "input_required": s.InputRequired})
		if !s.IsPollable() {
			return 0
		}
	}
	return fail(fmt.Errorf("the task is still running after %d polls", *polls))
}
