package taskplugin_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/plugins"
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
