package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// question is an input_required snapshot.
func question() taskstore.State {
	return taskstore.State{Status: "input_required", InputRequired: json.RawMessage(`{"question":"Which audience?"}`)}
}

// asking creates task id waiting for input, due at at(0).
func asking(t *testing.T, s *taskstore.Store, id string) taskstore.Task {
	t.Helper()
	return create(t, s, newTask(id, func(nt *taskstore.NewTask) { nt.State = question() }), at(0))
}

const answerJSON = `{"action":"accept","content":{"audience":"board"}}`

func recordAnswer(t *testing.T, s *taskstore.Store, id, answerID string, now time.Time) taskstore.Task {
	t.Helper()
	task, err := s.RecordAnswer(context.Background(), id, task.Scope{User: user, Thread: thread}, answerID, json.RawMessage(answerJSON), now)
	if err != nil {
		t.Fatalf("RecordAnswer(%s): %v", id, err)
	}
	return task
}

// testRecordAnswer: an answer is taken only by the owner's task waiting for
// input, once while pending, and moves it to working, due now, with any
// poll lease cleared.
func testRecordAnswer(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	asking(t, s, "ask")
	inFlight := claimOne(t, s, at(0), "owner-a", "ask")
	got := recordAnswer(t, s, "ask", "answer-1", at(2*time.Second))
	if got.Status != "working" || got.AnswerStatus != taskstore.AnswerPending || got.AnswerID != "answer-1" ||
		string(got.Answer) != answerJSON || !got.AnswerRecordedAt.Equal(at(2*time.Second)) ||
		!got.NextPollAt.Equal(at(2*time.Second)) || got.LeaseToken != "" || string(got.InputRequired) != `{"question":"Which audience?"}` {
		t.Fatalf("recorded answer: %+v", got)
	}
	if apply(t, s, "ask", "owner-a", inFlight.LeaseToken, status("input_required"), at(time.Hour), at(3*time.Second)) {
		t.Error("a poll in flight when the answer was recorded overwrote it")
	}
	if _, err := s.RecordAnswer(ctx, "ask", task.Scope{User: user, Thread: thread}, "answer-2", json.RawMessage(answerJSON), at(3*time.Second)); !errors.Is(err, taskstore.ErrAnswerPending) {
		t.Errorf("second answer while one is pending: %v, want ErrAnswerPending", err)
	}
	if _, err := s.RecordAnswer(ctx, "ask", task.Scope{User: "user-2", Thread: thread}, "answer-3", json.RawMessage(answerJSON), at(3*time.Second)); !errors.Is(err, taskstore.ErrNotFound) {
		t.Errorf("another user's answer: %v, want ErrNotFound", err)
	}
	if _, err := s.RecordAnswer(ctx, "ask", task.Scope{User: user, Thread: "thread-2"}, "answer-3", json.RawMessage(answerJSON), at(3*time.Second)); !errors.Is(err, taskstore.ErrNotFound) {
		t.Errorf("an answer in another thread: %v, want ErrNotFound", err)
	}

	create(t, s, newTask("busy"), at(0))
	var nir *taskstore.NotInputRequiredError
	if _, err := s.RecordAnswer(ctx, "busy", task.Scope{User: user, Thread: thread}, "answer-4", json.RawMessage(answerJSON), at(time.Second)); !errors.As(err, &nir) || nir.Status != "submitted" {
		t.Errorf("answer to a submitted task: %v, want a NotInputRequiredError", err)
	}
	asking(t, s, "cancelled")
	requestCancel(t, s, "cancelled", at(time.Second))
	if _, err := s.RecordAnswer(ctx, "cancelled", task.Scope{User: user, Thread: thread}, "answer-5", json.RawMessage(answerJSON), at(2*time.Second)); !errors.As(err, &nir) || !nir.CancelRequested {
		t.Errorf("answer to a task being cancelled: %v, want a NotInputRequiredError", err)
	}
}

// testRecordAnswerTo: an answer to a question is taken only while the task
// still asks that question. After the remote asked another one, the answer
// to the first is refused with ErrQuestionChanged and nothing is recorded;
// an answer to the question asked now is taken.
func testRecordAnswerTo(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	sc := task.Scope{User: user, Thread: thread}
	first := asking(t, s, "ask").Question()
	claimed := claimOne(t, s, at(0), "owner-a", "ask")
	second := taskstore.State{Status: "input_required", InputRequired: json.RawMessage(`{"question":"Which quarter?"}`)}
	if !apply(t, s, "ask", "owner-a", claimed.LeaseToken, second, at(time.Second), at(time.Second)) {
		t.Fatal("the poll asking a second question was fenced")
	}
	got, err := s.RecordAnswerTo(ctx, "ask", sc, first, "answer-1", json.RawMessage(answerJSON), at(2*time.Second))
	if !errors.Is(err, taskstore.ErrQuestionChanged) {
		t.Fatalf("answer to the first question after the second was asked: %v, want ErrQuestionChanged", err)
	}
	if got.Status != "input_required" || got.AnswerStatus != "" || got.AnswerID != "" || string(got.InputRequired) != `{"question":"Which quarter?"}` {
		t.Fatalf("the refused answer changed the task: %+v", got)
	}
	got, err = s.RecordAnswerTo(ctx, "ask", sc, got.Question(), "answer-2", json.RawMessage(answerJSON), at(3*time.Second))
	if err != nil || got.AnswerStatus != taskstore.AnswerPending || got.AnswerID != "answer-2" {
		t.Fatalf("answer to the question asked now: %+v %v", got, err)
	}
	if _, err := s.RecordAnswerTo(ctx, "ask", task.Scope{User: "user-2", Thread: thread}, got.Question(), "answer-3", json.RawMessage(answerJSON), at(4*time.Second)); !errors.Is(err, taskstore.ErrNotFound) {
		t.Errorf("another user's answer: %v, want ErrNotFound", err)
	}
}

// testAnswerDelivery: the claim of a task with a pending answer is the
// delivery's lease. A failed delivery keeps the answer pending with its
// error; the reply clears it and stores the state and driver data in one
// write, fenced by lease and answer id; a poll write cannot settle it.
func testAnswerDelivery(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	asking(t, s, "ask")
	recordAnswer(t, s, "ask", "answer-1", at(time.Second))
	c := claimOne(t, s, at(time.Second), "owner-a", "ask")
	if c.AnswerStatus != taskstore.AnswerPending || string(c.Answer) != answerJSON {
		t.Fatalf("claimed row lacks its pending answer: %+v", c)
	}
	if ok, err := s.ReleaseAnswerClaim(ctx, taskstore.Lease{ID: "ask", Owner: "owner-a", Token: c.LeaseToken}, "answer-1", at(time.Minute), "upstream unavailable", at(2*time.Second)); err != nil || !ok {
		t.Fatalf("ReleaseAnswerClaim = %v, %v", ok, err)
	}
	if got := get(t, s, "ask"); got.AnswerStatus != taskstore.AnswerPending || got.AnswerError != "upstream unavailable" ||
		got.ConsecutivePollErrorCount != 1 || string(got.Answer) != answerJSON {
		t.Fatalf("after a failed delivery: %+v", got)
	}
	c = claimOne(t, s, at(time.Minute), "owner-b", "ask")
	if apply(t, s, "ask", "owner-b", c.LeaseToken, status("completed"), time.Time{}, at(time.Minute+time.Second)) {
		t.Error("a poll write settled a pending answer")
	}
	done := taskstore.State{Status: "completed", Result: json.RawMessage(`"for the board"`)}
	if ok, err := s.ApplyAnswer(ctx, taskstore.Lease{ID: "ask", Owner: "owner-b", Token: c.LeaseToken}, "answer-0", done, nil, time.Time{}, at(time.Minute+time.Second)); err != nil || ok {
		t.Errorf("ApplyAnswer with another answer id = %v, %v; want fenced", ok, err)
	}
	if ok, err := s.ApplyAnswer(ctx, taskstore.Lease{ID: "ask", Owner: "owner-b", Token: c.LeaseToken}, "answer-1", done, json.RawMessage(`{"k":"v"}`), time.Time{}, at(time.Minute+time.Second)); err != nil || !ok {
		t.Fatalf("ApplyAnswer = %v, %v", ok, err)
	}
	got := get(t, s, "ask")
	if got.Status != "completed" || string(got.Result) != `"for the board"` || got.AnswerStatus != taskstore.AnswerDelivered ||
		got.Answer != nil || got.AnswerError != "" || got.AnswerID != "answer-1" || string(got.DriverData) != `{"k":"v"}` ||
		got.ConsecutivePollErrorCount != 0 || got.LeaseToken != "" || got.EventVersion == 0 {
		t.Errorf("after delivery: %+v", got)
	}
}

// testAnswerRefused: a refusal gives the question back with the refusal as
// the task's error, recorded as an event; a new answer is then taken.
func testAnswerRefused(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	before := asking(t, s, "ask")
	recordAnswer(t, s, "ask", "answer-1", at(time.Second))
	c := claimOne(t, s, at(time.Second), "owner-a", "ask")
	if ok, err := s.RefuseAnswer(ctx, taskstore.Lease{ID: "ask", Owner: "owner-a", Token: c.LeaseToken}, "answer-1", "the answer was refused", at(time.Minute), at(2*time.Second)); err != nil || !ok {
		t.Fatalf("RefuseAnswer = %v, %v", ok, err)
	}
	got := get(t, s, "ask")
	if got.Status != "input_required" || got.Error != "the answer was refused" || got.AnswerStatus != taskstore.AnswerRefused ||
		got.Answer != nil || got.AnswerError != "the answer was refused" || string(got.InputRequired) != `{"question":"Which audience?"}` ||
		got.EventVersion != before.EventVersion+1 || !got.NextPollAt.Equal(at(time.Minute)) {
		t.Fatalf("after a refusal: %+v", got)
	}
	if again := recordAnswer(t, s, "ask", "answer-2", at(3*time.Second)); again.AnswerStatus != taskstore.AnswerPending || again.AnswerError != "" {
		t.Errorf("a new answer after the refusal: %+v", again)
	}
}

// testCancelAbandonsAnswer: a cancel of a task whose answer is pending
// fences the delivery and drops the answer when it ends the task.
func testCancelAbandonsAnswer(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	asking(t, s, "ask")
	recordAnswer(t, s, "ask", "answer-1", at(time.Second))
	c := claimOne(t, s, at(time.Second), "owner-a", "ask")
	requestCancel(t, s, "ask", at(2*time.Second))
	if ok, err := s.ApplyAnswer(ctx, taskstore.Lease{ID: "ask", Owner: "owner-a", Token: c.LeaseToken}, "answer-1", status("working"), nil, at(time.Hour), at(3*time.Second)); err != nil || ok {
		t.Errorf("ApplyAnswer after a cancel request = %v, %v; want fenced", ok, err)
	}
	cc := claimCancel(t, s, at(3*time.Second), "owner-a")
	if len(cc) != 1 {
		t.Fatalf("cancel claims: %v", ids(cc))
	}
	if ok, err := s.ApplyCancelState(ctx, taskstore.Lease{ID: "ask", Owner: "owner-a", Token: cc[0].LeaseToken}, status("cancelled"), at(4*time.Second)); err != nil || !ok {
		t.Fatalf("ApplyCancelState = %v, %v", ok, err)
	}
	if got := get(t, s, "ask"); got.AnswerStatus != taskstore.AnswerAbandoned || got.Answer != nil {
		t.Errorf("after the cancel: answer %s %s", got.AnswerStatus, got.Answer)
	}
}

// testApplyPollDriverData: a poll replaces the driver data when it brings
// some and leaves it alone when it brings none.
func testApplyPollDriverData(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	create(t, s, newTask("t", func(nt *taskstore.NewTask) { nt.DriverData = json.RawMessage(`{"tool":"x"}`) }), at(0))
	c := claimOne(t, s, at(0), "owner-a", "t")
	if ok, err := s.ApplyPoll(ctx, taskstore.Lease{ID: "t", Owner: "owner-a", Token: c.LeaseToken}, status("working"), json.RawMessage(`{"tool":"x","request":"7"}`), at(time.Minute), at(time.Second)); err != nil || !ok {
		t.Fatalf("ApplyPoll = %v, %v", ok, err)
	}
	if got := get(t, s, "t"); string(got.DriverData) != `{"tool":"x","request":"7"}` {
		t.Errorf("driver data after a poll that replaced it: %s", got.DriverData)
	}
	c = claimOne(t, s, at(time.Minute), "owner-a", "t")
	if ok, err := s.ApplyPoll(ctx, taskstore.Lease{ID: "t", Owner: "owner-a", Token: c.LeaseToken}, status("working"), nil, at(2*time.Minute), at(time.Minute+time.Second)); err != nil || !ok {
		t.Fatalf("ApplyPoll = %v, %v", ok, err)
	}
	if got := get(t, s, "t"); string(got.DriverData) != `{"tool":"x","request":"7"}` {
		t.Errorf("driver data after a poll without any: %s", got.DriverData)
	}
}
