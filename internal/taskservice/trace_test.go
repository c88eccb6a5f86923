package taskservice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
	"github.com/antler-mcp/antler/internal/tracing"
)

// TestTaskPollsAreTracesLinkedToTheSubmit: the submit's trace context is kept
// with the task, and each background poll is a trace of its own (a new root)
// that links back to the call that submitted the task.
func TestTaskPollsAreTracesLinkedToTheSubmit(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	rt := testtask.NewTraced(t, fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, %s}}}`, testmcp.BuildReports(t), testtask.ReportsToolset), testtask.FastConfig(), tr)

	ctx, caller := tr.Start(context.Background(), "agent tools/call", trace.SpanKindServer)
	row, err := rt.Service.Submit(ctx, ordinary.Name, task.SubmitRequest{
		UserID: "alice", ThreadID: "t1", ServerName: "reports", TaskName: "traced",
		Arguments:  json.RawMessage(`{"topic": "traced", "delay_ms": 0}`),
		DriverData: ordinary.DriverData("submit_report", "get_report_status", "cancel_report"),
	})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	sc := caller.SpanContext()
	if want := fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()); row.TraceParent != want {
		t.Fatalf("stored trace parent %q, want the submit's %s", row.TraceParent, want)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := rt.Service.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		got, err := rt.Store.Get(context.Background(), row.ID, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task is %s, want completed", got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var polls int
	for _, s := range exp.GetSpans() {
		if s.Name != taskservice.SpanPoll {
			continue
		}
		polls++
		if s.Parent.IsValid() || s.SpanContext.TraceID() == sc.TraceID() {
			t.Errorf("poll span is not a trace of its own: parent %v, trace %s", s.Parent, s.SpanContext.TraceID())
		}
		if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != sc.SpanID() || s.Links[0].SpanContext.TraceID() != sc.TraceID() {
			t.Errorf("poll span links %v, want one link to the submit %s", s.Links, sc.SpanID())
		}
	}
	if polls == 0 {
		t.Fatal("no poll span recorded")
	}
}
