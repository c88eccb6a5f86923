package taskplugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/task/spectasks"
	"github.com/antler-mcp/antler/internal/taskplugin"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/testtask"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// BenchmarkDriverStatus measures one status poll through the example driver
// in each carrier, with the host's call_tool answered in-process (a running
// job's state, as the jobs server answers it): the carrier's cost per poll,
// without the upstream's.
func BenchmarkDriverStatus(b *testing.B) {
	state, _ := json.Marshal(map[string]any{"structuredContent": map[string]any{"job": 7, "state": 1, "progress": 1, "steps": 3}})
	callTool := func(context.Context, *abi.CallToolRequest) abi.CallToolResponse {
		return abi.CallToolResponse{Result: state}
	}
	ref := &abi.TaskReference{LocalTaskID: "mcp-task-1", UserID: "alice", ThreadID: "t1", ServerName: "jobs", RemoteTaskID: "7",
		DriverData: []byte(`{"submit_tool":"enqueue","status_tool":"job_state","cancel_tool":"abort_job"}`)}
	for _, c := range []struct {
		name, kind string
		build      func(testing.TB, string) string
	}{
		{"wasm", plugins.KindWasm, plugintest.BuildWasm},
		{"process", plugins.KindProcess, buildProcess},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := c.build(b, exampleDriver)
			host, err := plugins.NewHost("", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer host.Close(context.Background())
			d, err := host.LoadDriver(context.Background(), plugins.Entry{Name: "jobsdriver", Kind: c.kind, Path: path})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				resp, err := d.Status(context.Background(), ref, callTool)
				if err != nil || resp.Snapshot == nil || resp.Snapshot.Status != abi.StatusWorking {
					b.Fatalf("status = %+v, %v", resp, err)
				}
			}
		})
	}
}

// BenchmarkDriverPoll measures one status poll of a working task through
// each driver the host has, against one real upstream (testdata/
// benchupstream over stdio, a process per configured server, on the
// host's own session pool): the ordinary driver's status tool, the spec
// driver's tasks/get in 2025-11-25 and in the 2026-07-28 extension, and the
// example plugin driver's job_state in each carrier. Every figure is the
// driver plus one round trip to the same server.
func BenchmarkDriverPoll(b *testing.B) {
	bin := buildProcess(b, "testdata/benchupstream")
	doc := fmt.Sprintf(`{"mcpServers": {"bench": {"command": %q}, "bench25": {"command": %q, "protocol_version": "2025-11-25"}}}`, bin, bin)
	rt := testtask.New(b, doc, testtask.FastConfig())
	ctx := context.Background()
	ref := func(server, remote string, data map[string]string) task.Reference {
		return task.Reference{LocalTaskID: "mcp-task-bench", UserID: "alice", ThreadID: "t1", ServerName: server, RemoteTaskID: remote, DriverData: data}
	}
	// submit starts a task of a spec driver and returns its reference.
	submit := func(b *testing.B, d task.Driver, server, tool string) task.Reference {
		sub, err := d.Submit(ctx, task.SubmitRequest{UserID: "alice", ThreadID: "t1", ServerName: server, TaskName: tool,
			Arguments: json.RawMessage(`{}`), DriverData: spectasks.DriverData(tool, 0), LocalTaskID: "mcp-task-bench"})
		if err != nil {
			b.Fatalf("submit %s: %v", tool, err)
		}
		r := ref(server, sub.RemoteTaskID, sub.DriverData)
		return r
	}
	plugin := func(b *testing.B, kind, path string) task.Driver {
		host, err := plugins.NewHost("", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { host.Close(context.Background()) })
		p, err := host.LoadDriver(ctx, plugins.Entry{Name: "jobsdriver", Kind: kind, Path: path})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		return taskplugin.New(p, taskservice.CacheCaller{Cache: rt.Cache}, nil)
	}
	jobsData := ordinary.DriverData("enqueue", "job_state", "abort_job")
	for _, c := range []struct {
		name  string
		setup func(b *testing.B) (task.Driver, task.Reference)
	}{
		{"ordinary", func(b *testing.B) (task.Driver, task.Reference) {
			return ordinary.New(taskservice.CacheCaller{Cache: rt.Cache}), ref("bench", "r-1", ordinary.DriverData("submit_report", "report_status", "cancel_report"))
		}},
		{"spec-2025-11-25", func(b *testing.B) (task.Driver, task.Reference) {
			d := spectasks.New(taskservice.SpecCaller{Cache: rt.Cache}, spectasks.Options{})
			return d, submit(b, d, "bench25", "spec_job")
		}},
		{"spec-2026-07-28", func(b *testing.B) (task.Driver, task.Reference) {
			d := spectasks.NewExtension(taskservice.SpecCaller{Cache: rt.Cache}, spectasks.Options{})
			return d, submit(b, d, "bench", "ext_job")
		}},
		{"plugin-wasm", func(b *testing.B) (task.Driver, task.Reference) {
			return plugin(b, plugins.KindWasm, plugintest.BuildWasm(b, exampleDriver)), ref("bench", "7", jobsData)
		}},
		{"plugin-process", func(b *testing.B) (task.Driver, task.Reference) {
			return plugin(b, plugins.KindProcess, buildProcess(b, exampleDriver)), ref("bench", "7", jobsData)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			d, r := c.setup(b)
			if s, err := d.Status(ctx, r); err != nil || s.Status != task.StatusWorking {
				b.Fatalf("first poll = %+v, %v, want working", s, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s, err := d.Status(ctx, r)
				if err != nil || s.Status != task.StatusWorking {
					b.Fatalf("poll = %+v, %v", s, err)
				}
			}
		})
	}
}
