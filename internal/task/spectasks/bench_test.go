package spectasks_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/spectasks"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/tasktools"
	"github.com/antler-mcp/antler/internal/testtask"
)

// BenchmarkExtensionPoll is the per-poll cost of the 2026-07-28 driver: one
// Status (a tasks/get through the tool cache's credential layers, Mcp-Name
// set over HTTP) of a working job of the example server, over stdio and
// streamable HTTP.
func BenchmarkExtensionPoll(b *testing.B) {
	for _, tr := range extTransports {
		b.Run(tr.name, func(b *testing.B) {
			rt := testtask.New(b, jobsDoc(tr.server(b)), testtask.FastConfig())
			tool := jobsTool(b, rt.Cache)
			req := tasktools.SubmitRequest(tool, dispatch.Request{UserID: "alice", ThreadID: "t1", Arguments: json.RawMessage(`{"topic":"bench","duration_ms":3600000}`)})
			req.LocalTaskID = task.LocalID()
			drv := spectasks.NewExtension(taskservice.SpecCaller{Cache: rt.Cache}, spectasks.Options{})
			sub, err := drv.Submit(context.Background(), req)
			if err != nil {
				b.Fatal(err)
			}
			ref := task.Reference{LocalTaskID: req.LocalTaskID, UserID: "alice", ThreadID: "t1", ServerName: "jobs", RemoteTaskID: sub.RemoteTaskID, DriverData: sub.DriverData}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s, err := drv.Status(context.Background(), ref)
				if err != nil || s.Status != task.StatusWorking {
					b.Fatalf("poll: %+v %v", s, err)
				}
			}
		})
	}
}
