package taskservice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
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
	eventually.Check(t, "the task to complete", func() (bool, string) {
		if err := rt.Service.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		got, err := rt.Store.Get(context.Background(), row.ID, "alice")
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == "completed", string(got.Status)
	})
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

// TestDeliveriesAreTracesLinkedToTheSubmit: a webhook delivery of a task's
// event is a trace of its own linked to the submit kept with the task, and
// the receiver gets the delivery span's context as the traceparent header;
// with tracing off it gets no trace context header at all.
func TestDeliveriesAreTracesLinkedToTheSubmit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		traced bool
	}{
		{"tracing on: the receiver sees the delivery span as traceparent", true},
		{"tracing off: the receiver sees no trace context header", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			var tr *tracing.Tracer
			if tc.traced {
				tr = tracing.New(sdktrace.WithSyncer(exp))
				t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
			}
			hook := newReceiver(t, 200)
			store := openStore(t, filepath.Join(t.TempDir(), "tasks.db"))
			cfg := task.DefaultConfig()
			cfg.Enabled = true
			svc := taskservice.New(taskservice.Options{Store: store, Drivers: &task.Registry{}, Config: cfg, Tracer: tr,
				Notifier: &tasknotify.Webhook{URL: hook.srv.URL, Secret: webhookSecret}})
			const submit = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			if _, err := store.Create(context.Background(), taskstore.NewTask{
				ID: "mcp-task-traced", UserID: "alice", ThreadID: "t1", ServerName: "reports", DriverName: "ordinary-tools",
				RemoteTaskID: "remote-traced", TaskName: "Q3 report", TraceParent: submit,
				State: taskstore.State{Status: "completed", Result: json.RawMessage(`{"ok": true}`)},
			}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := svc.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := hook.deliveries()
			if n := len(got); n != 1 {
				t.Fatalf("%d deliveries, want 1", n)
			}
			d := got[0]
			if !tc.traced {
				if d.traceHeaders != 0 {
					t.Fatalf("untraced delivery has trace context headers: traceparent %q, tracestate %q", d.traceparent, d.tracestate)
				}
				return
			}
			for _, s := range exp.GetSpans() {
				if s.Name != taskservice.SpanNotify {
					continue
				}
				if s.Parent.IsValid() || len(s.Links) != 1 || s.Links[0].SpanContext.SpanID().String() != "00f067aa0ba902b7" ||
					s.Links[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
					t.Fatalf("delivery span: parent %v, links %v; want a new root linked to the submit", s.Parent, s.Links)
				}
				sc := s.SpanContext
				if want := fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()); d.traceparent != want {
					t.Fatalf("receiver saw traceparent %q, want the delivery span's %s", d.traceparent, want)
				}
				if strings.Contains(d.raw, d.traceparent) {
					t.Fatal("the trace context is in the signed body, want it in the headers only")
				}
				return
			}
			t.Fatal("no delivery span recorded")
		})
	}
}
