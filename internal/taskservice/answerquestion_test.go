package taskservice_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
)

// TestAnswerQuestionIsForTheQuestionAsked: an answer to a question the
// task no longer asks (a client shown an earlier one) is refused with
// ErrQuestionChanged and records nothing; the answer to the question the
// task asks is taken, delivered, and completes the task with it.
func TestAnswerQuestionIsForTheQuestionAsked(t *testing.T) {
	t.Parallel()
	rt := testtask.New(t, fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, %s}}}`, testmcp.BuildReports(t), testtask.ReportsAnswerToolset), testtask.FastConfig())
	rt.Service.Start()
	ctx := context.Background()
	data := ordinary.DriverData("submit_report", "get_report_status", "cancel_report")
	data[ordinary.RespondToolKey] = "respond_report"
	row, err := rt.Service.Submit(ctx, ordinary.Name, task.SubmitRequest{UserID: "alice", ThreadID: "t1", ServerName: "reports",
		TaskName: "report", Arguments: json.RawMessage(`{"topic": "x", "delay_ms": 0, "ask": "Who reads it?"}`), DriverData: data})
	if err != nil {
		t.Fatal(err)
	}
	sc := task.Scope{User: "alice", Thread: "t1"}
	row = testtask.Await(t, rt.Store, row.ID, "alice", "the task to ask", func(r taskstore.Task) bool { return r.Status == task.StatusInputRequired })
	answer := task.Answer{Action: "accept", Content: json.RawMessage(`{"answer": "the board"}`)}

	earlier := taskstore.Question{InputRequired: json.RawMessage(`{"question":"Which quarter?"}`)}
	if _, err := rt.Service.AnswerQuestion(ctx, row.ID, sc, earlier, answer); !errors.Is(err, taskstore.ErrQuestionChanged) {
		t.Fatalf("an answer to a question the task does not ask: %v, want ErrQuestionChanged", err)
	}
	if now, _ := rt.Store.Get(ctx, row.ID, "alice"); now.Status != task.StatusInputRequired || now.AnswerStatus != "" {
		t.Fatalf("the refused answer changed the task: status %s, answer %q", now.Status, now.AnswerStatus)
	}

	got, err := rt.Service.AnswerQuestion(ctx, row.ID, sc, row.Question(), answer)
	if err != nil || got.AnswerStatus != taskstore.AnswerPending {
		t.Fatalf("the answer to the question asked: %+v %v", got, err)
	}
	testtask.Await(t, rt.Store, row.ID, "alice", "the task to complete with the answer", func(r taskstore.Task) bool {
		return r.Status == task.StatusCompleted && strings.Contains(string(r.Result), "the board")
	})
}
