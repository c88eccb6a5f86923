package spectasks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/spectasks"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/testnpm"
)

// waitRow waits (a hang guard) until ok holds for the task's row.
func waitRow(t *testing.T, store *taskstore.Store, id string, what string, ok func(taskstore.Task) bool) taskstore.Task {
	t.Helper()
	var row taskstore.Task
	eventually.Check(t, "task "+what, func() (bool, string) {
		var err error
		row, err = store.Get(context.Background(), id, "alice")
		if err != nil {
			t.Fatal(err)
		}
		return ok(row), fmt.Sprintf("%+v", row)
	})
	return row
}

// TestAnswerTheServerNoLongerWaitsForIsAbandoned holds server-everything's
// clarification question in one host, has the elicitation answered out of
// band on the task's session (as a host that delivered and died before
// recording it would, or a server that gave up), records the user's answer
// in the store with no host running, and starts another host: the server no
// longer waits, so the answer is abandoned, with a last error that says so,
// never sent to a request the server has settled, and the task goes on to
// complete with the outcome the server applied.
func TestAnswerTheServerNoLongerWaitsForIsAbandoned(t *testing.T) {
	url := testnpm.StartEverythingHTTP(t)
	config := doc(fmt.Sprintf(`{"type": "http", "url": %q}`, url))
	dbPath := filepath.Join(t.TempDir(), "tasks.db")

	first := host(t, config, dbPath)
	first.svc.Start()
	id := submit(t, first.svc, researchTool(t, first.cache), `{"topic": "python", "ambiguous": true}`)
	var data map[string]string
	row := waitRow(t, first.store, id, "held its question", func(r taskstore.Task) bool {
		return r.Status == task.StatusInputRequired && json.Unmarshal(r.DriverData, &data) == nil && data[spectasks.HeldRequestKey] != ""
	})
	if !first.svc.CanAnswer(row) || !strings.Contains(string(row.InputRequired), "requestedSchema") {
		t.Fatalf("question %s, can answer %v", row.InputRequired, first.svc.CanAnswer(row))
	}
	first.svc.Stop()

	body := fmt.Sprintf(`{"jsonrpc": "2.0", "id": %s, "result": {"action": "decline"}}`, data[spectasks.HeldRequestKey])
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", data[spectasks.SessionKey])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("out-of-band response: %s", resp.Status)
	}
	if _, err := first.store.RecordAnswer(context.Background(), id, task.Scope{User: "alice", Thread: "t1"}, "mcp-answer-abandoned-test",
		json.RawMessage(`{"action": "accept", "content": {"interpretation": "snake"}}`), time.Now()); err != nil {
		t.Fatal(err)
	}

	second := host(t, config, dbPath)
	second.svc.Start()
	row = waitRow(t, second.store, id, "settled its answer", func(r taskstore.Task) bool { return r.AnswerStatus != taskstore.AnswerPending })
	if row.AnswerStatus != taskstore.AnswerAbandoned || !strings.Contains(row.AnswerError, "no longer waits for this answer") {
		t.Errorf("answer %s (%q), want abandoned saying the server no longer waits", row.AnswerStatus, row.AnswerError)
	}
	row = waitStatus(t, second.store, id, task.StatusCompleted)
	if r := string(row.Result); !strings.Contains(r, "User declined") || strings.Contains(r, "snake") {
		t.Errorf("result = %.400s, want the outcome the server applied", r)
	}
	var after map[string]string
	if err := json.Unmarshal(row.DriverData, &after); err != nil || after[spectasks.HeldRequestKey] != "" {
		t.Errorf("driver data %s still holds the settled request", row.DriverData)
	}
}

// TestAnswerRules checks what Answer sends for each answer, with a
// scripted server (the refusals and the session are not what a real
// server can vary): content is validated against the question's
// requestedSchema before anything is sent, errors naming the field and
// never the value; the response goes to the held request's id on the
// task's session; a task with no held request takes no answer.
func TestAnswerRules(t *testing.T) {
	question := `{"method":"elicitation/create","message":"Which python?","requestedSchema":{"type":"object",
		"properties":{"interpretation":{"type":"string","oneOf":[{"const":"snake"},{"const":"programming"}]},"years":{"type":"integer","minimum":1}},
		"required":["interpretation"]}}`
	held := func() task.Reference {
		r := ref()
		r.DriverData[spectasks.HeldRequestKey] = "7"
		r.DriverData[spectasks.QuestionKey] = question
		return r
	}
	tests := []struct {
		name      string
		ref       task.Reference
		answer    task.Answer
		status    string // tasks/get's
		errHas    string
		abandoned bool
		sent      string // the response's result
	}{
		{name: "accept", ref: held(), answer: task.Answer{Action: "accept", Content: json.RawMessage(`{"interpretation":"snake"}`)},
			status: "input_required", sent: `{"action":"accept","content":{"interpretation":"snake"}}`},
		{name: "decline", ref: held(), answer: task.Answer{Action: "decline"}, status: "input_required", sent: `{"action":"decline"}`},
		{name: "cancel", ref: held(), answer: task.Answer{Action: "cancel"}, status: "input_required", sent: `{"action":"cancel"}`},
		{name: "a value the schema does not allow", ref: held(), answer: task.Answer{Action: "accept", Content: json.RawMessage(`{"interpretation":"canary-5e1"}`)},
			errHas: "content.interpretation"},
		{name: "a missing required field", ref: held(), answer: task.Answer{Action: "accept", Content: json.RawMessage(`{"years":3}`)},
			errHas: "'interpretation'"},
		{name: "a wrong type", ref: held(), answer: task.Answer{Action: "accept", Content: json.RawMessage(`{"interpretation":"snake","years":"canary-5e1"}`)},
			errHas: "content.years"},
		{name: "no held request", ref: ref(), answer: task.Answer{Action: "decline"}, errHas: "no elicitation Antler holds"},
		{name: "the server moved on", ref: held(), answer: task.Answer{Action: "decline"}, status: "working", abandoned: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{answers: map[string]answer{
				"tasks/get":             {result: getTask(tt.status, "", nil)},
				spectasks.MethodRespond: {result: `{}`},
			}}
			d := spectasks.New(s, spectasks.Options{})
			if got, want := d.CanAnswer(tt.ref), tt.ref.DriverData[spectasks.HeldRequestKey] != ""; got != want {
				t.Errorf("CanAnswer = %v, want %v", got, want)
			}
			snap, err := d.Answer(context.Background(), tt.ref, json.RawMessage(question), tt.answer)
			var ab *task.AbandonedError
			switch {
			case tt.abandoned:
				if !errors.As(err, &ab) || ab.State.Status != task.StatusWorking || ab.State.DriverData[spectasks.HeldRequestKey] != "" {
					t.Fatalf("err = %v, want abandoned with the task working and nothing held", err)
				}
			case tt.errHas != "":
				if !task.IsPermanent(err) || !strings.Contains(err.Error(), tt.errHas) || strings.Contains(err.Error(), "canary-5e1") {
					t.Fatalf("err = %v, want a refusal naming %q without the value", err, tt.errHas)
				}
				if len(s.calls) != 0 {
					t.Errorf("calls %v, want none before the content is valid", s.methods())
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				last := s.calls[len(s.calls)-1]
				if last.Method != spectasks.MethodRespond || string(last.RequestID) != "7" || string(last.Result) != tt.sent || last.Session != "s1" {
					t.Errorf("response %+v (result %s), want %s to request 7 on session s1", last, last.Result, tt.sent)
				}
				if snap.Status != task.StatusWorking || snap.DriverData == nil || snap.DriverData[spectasks.HeldRequestKey] != "" || snap.DriverData[spectasks.QuestionKey] != "" {
					t.Errorf("snapshot %+v, want working with nothing held", snap)
				}
			}
		})
	}
}
