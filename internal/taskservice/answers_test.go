package taskservice_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/taskstore/storetest"
)

// TestAnswersOnTwoReplicas runs two hosts on one Postgres task table
// against one reports server whose respond tool fails its first call per
// task: each task's answer, recorded through either host, is delivered
// under one answer id, applied upstream once, retried once after the
// failure (by either host), and every task completes with it.
func TestAnswersOnTwoReplicas(t *testing.T) {
	dsn := storetest.PostgresSchema(t, storetest.PostgresURL(t))
	cfgPath := httpReports(t)
	cfg := fastConfig()
	cfg.LeaseSeconds = 5
	cfg.InputRequiredPollIntervalSeconds = 5
	a, storeA, cacheA := replica(t, cfgPath, dsn, cfg)
	b, _, _ := replica(t, cfgPath, dsn, cfg)
	data := ordinary.DriverData("submit_report", "get_report_status", "cancel_report")
	data[ordinary.RespondToolKey] = "respond_report"
	ctx := context.Background()

	var ids []string
	for i := range 6 {
		row, err := a.Submit(ctx, ordinary.Name, task.SubmitRequest{
			UserID: "alice", ThreadID: "t1", ServerName: "reports", TaskName: fmt.Sprintf("report %d", i),
			Arguments:  json.RawMessage(`{"topic": "x", "delay_ms": 0, "ask": "Who reads it?", "respond_errors": 1}`),
			DriverData: data,
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row.ID)
	}
	a.Start()
	b.Start()
	await := func(id string, status task.Status) taskstore.Task {
		t.Helper()
		var row taskstore.Task
		eventually.Check(t, fmt.Sprintf("task %s to be %s", id, status), func() (bool, string) {
			var err error
			row, err = storeA.Get(ctx, id, "alice")
			if err != nil {
				t.Fatal(err)
			}
			return row.Status == status, string(row.Status)
		})
		return row
	}
	for i, id := range ids {
		await(id, "input_required")
		svc := []*taskservice.Service{a, b}[i%2]
		row, err := svc.Answer(ctx, id, task.Scope{User: "alice", Thread: "t1"}, task.Answer{Action: "accept", Content: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))})
		if err != nil || row.AnswerStatus != taskstore.AnswerPending {
			t.Fatalf("answer %s: %+v %v", id, row, err)
		}
		if _, err := b.Answer(ctx, id, task.Scope{User: "alice", Thread: "t1"}, task.Answer{Action: "decline"}); !errors.Is(err, taskstore.ErrAnswerPending) {
			t.Errorf("a second answer on the other replica: %v, want ErrAnswerPending", err)
		}
	}
	for i, id := range ids {
		row := await(id, "completed")
		if !strings.Contains(string(row.Result), fmt.Sprintf(`{\"n\":%d}`, i)) || row.AnswerStatus != taskstore.AnswerDelivered || row.Answer != nil {
			t.Errorf("task %s: result %s, answer %s %s", id, row.Result, row.AnswerStatus, row.Answer)
		}
	}
	for remote, s := range serverStats(t, cacheA, "alice").PerTask {
		if len(s.AnswerCalls) != 1 || s.AnswerApplied == "" || s.AnswerCalls[s.AnswerApplied] != 2 {
			t.Errorf("remote task %s: respond calls %v, applied %q; want one answer id, called twice (the failure and the retry)", remote, s.AnswerCalls, s.AnswerApplied)
		}
	}
}
