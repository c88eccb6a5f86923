package taskservice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// ErrCannotAnswer is returned by Answer for a task whose driver cannot pass
// a reply on to the remote task.
var ErrCannotAnswer = errors.New("This MCP task's driver cannot take answers: the remote task cannot be resumed with user input through Antler")

// answerIDPrefix starts every answer's idempotency key.
const answerIDPrefix = "mcp-answer-"

// refusedPrefix starts the error a task shows after the remote refused the
// user's answer.
const refusedPrefix = "The remote MCP task refused the answer: "

// CanAnswer reports whether row's driver can take answers for it.
func (s *Service) CanAnswer(row taskstore.Task) bool {
	drv, err := s.drivers.Get(row.DriverName)
	return err == nil && task.CanAnswer(drv, reference(row))
}

// Answer records the user's answer to the caller's own task waiting for
// input; the background loop delivers it through the task's driver. It
// returns once the answer is durable, with the task (now working, the
// answer pending). It refuses, in this order: while no worker runs
// (ErrNotRunning), an invalid answer (Validate's error), another user's or
// thread's task (taskstore.ErrNotFound), a task whose driver cannot take
// answers (ErrCannotAnswer), a task not waiting for input
// (*taskstore.NotInputRequiredError) and a task whose earlier answer is
// still pending (taskstore.ErrAnswerPending). The answer's content is the
// user's data: no error or log line quotes it.
func (s *Service) Answer(ctx context.Context, id string, sc task.Scope, a task.Answer) (taskstore.Task, error) {
	return s.answer(ctx, id, sc, nil, a)
}

// AnswerQuestion is Answer for an answer to question q, the one the
// client was shown: it is recorded only while the task still asks q, else
// the error is taskstore.ErrQuestionChanged and nothing is recorded.
func (s *Service) AnswerQuestion(ctx context.Context, id string, sc task.Scope, q taskstore.Question, a task.Answer) (taskstore.Task, error) {
	return s.answer(ctx, id, sc, &q, a)
}

func (s *Service) answer(ctx context.Context, id string, sc task.Scope, q *taskstore.Question, a task.Answer) (taskstore.Task, error) {
	if !s.Running() {
		return taskstore.Task{}, ErrNotRunning
	}
	if err := a.Validate(); err != nil {
		return taskstore.Task{}, err
	}
	row, err := s.Get(ctx, id, sc)
	if err != nil {
		return taskstore.Task{}, err
	}
	if !s.CanAnswer(row) {
		return row, ErrCannotAnswer
	}
	body, err := json.Marshal(task.Answer{Action: a.Action, Content: a.Content})
	if err != nil {
		return taskstore.Task{}, errors.New("encode the answer: it is not valid JSON")
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	answerID := answerIDPrefix + hex.EncodeToString(b[:])
	if q != nil {
		row, err = s.store.RecordAnswerTo(ctx, id, sc, *q, answerID, body, s.now())
	} else {
		row, err = s.store.RecordAnswer(ctx, id, sc, answerID, body, s.now())
	}
	if err == nil {
		s.auditTask(row, "answer_recorded", task.StatusInputRequired)
	}
	return row, err
}

// deliverAnswer runs a claimed task's poll as the delivery of its pending
// answer, under the claim's lease: the driver's reply is stored, and the
// answer settled, in one fenced write. A retryable failure keeps the answer
// pending with backoff, to be delivered again under the same id (by this or
// another process); a permanent one records the refusal and gives the
// question back. A process that dies after the remote took the answer but
// before the write leaves the answer pending; its lease expires and the
// next delivery carries the same id, which the remote has seen.
func (s *Service) deliverAnswer(ctx context.Context, row taskstore.Task) error {
	drv, err := s.drivers.Get(row.DriverName)
	if err != nil {
		at := s.now()
		_, rerr := s.store.ReleaseAnswerClaim(ctx, row.Lease(), row.AnswerID,
			at.Add(task.PollBackoff(row.ConsecutivePollErrorCount, s.cfg)), err.Error(), at)
		return rerr
	}
	var snap task.State
	ans, ok := drv.(task.Answerer)
	if !ok {
		err = task.NewProtocolError(ErrCannotAnswer.Error())
	} else {
		var a task.Answer
		if jerr := json.Unmarshal(row.Answer, &a); jerr != nil {
			err = task.NewProtocolError("the stored answer could not be read")
		} else {
			a.ID = row.AnswerID
			snap, err = boundedCall(ctx, "answer", s.cfg.StatusCallBudget(), func(ctx context.Context) (task.State, error) {
				return ans.Answer(ctx, reference(row), row.InputRequired, a)
			})
		}
	}
	at := s.now()
	var abandoned *task.AbandonedError
	if errors.As(err, &abandoned) {
		return s.abandonAnswer(ctx, row, abandoned, at)
	}
	if err == nil {
		snap, err = task.Normalize(snap, s.cfg)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil // shutting down: the lease expires and the answer is delivered again
	case err != nil && task.IsPermanent(err):
		msg := task.Truncate(refusedPrefix+err.Error(), task.MaxErrorChars)
		ok, rerr := s.store.RefuseAnswer(ctx, row.Lease(), row.AnswerID, msg, at.Add(s.cfg.InputRequiredPollInterval()), at)
		if rerr == nil && ok {
			s.auditTask(row, "answer_refused", "")
		}
		if rerr == nil && !ok {
			s.log.Warn("Discarded an MCP task answer's refusal after lease ownership changed or expired", "task_id", row.ID)
		}
		return rerr
	case err != nil:
		next := at.Add(task.PollBackoff(row.ConsecutivePollErrorCount, s.cfg))
		_, rerr := s.store.ReleaseAnswerClaim(ctx, row.Lease(), row.AnswerID, next, task.Truncate(err.Error(), task.MaxErrorChars), at)
		return rerr
	}
	next := nextPoll(at, snap, s.cfg)
	ok, err = s.store.ApplyAnswer(ctx, row.Lease(), row.AnswerID, toStore(snap), driverData(snap), next, at)
	if err == nil && ok {
		s.auditMove(row, "answer_delivered", snap.Status)
	}
	if err == nil && !ok {
		s.log.Warn("Discarded an MCP task answer's reply after lease ownership changed or expired; the answer stays pending", "task_id", row.ID)
	}
	return err
}

// abandonAnswer settles a claimed task's pending answer as abandoned (the
// remote no longer waits for it) and stores the task's state the driver
// read, in one fenced write; a state that does not normalise is a poll
// failure instead, the answer staying pending.
func (s *Service) abandonAnswer(ctx context.Context, row taskstore.Task, ab *task.AbandonedError, at time.Time) error {
	snap, err := task.Normalize(ab.State, s.cfg)
	if err != nil {
		next := at.Add(task.PollBackoff(row.ConsecutivePollErrorCount, s.cfg))
		_, rerr := s.store.ReleaseAnswerClaim(ctx, row.Lease(), row.AnswerID, next, task.Truncate(err.Error(), task.MaxErrorChars), at)
		return rerr
	}
	msg := task.Truncate("The answer was not delivered: "+ab.Reason, task.MaxErrorChars)
	ok, err := s.store.AbandonAnswer(ctx, row.Lease(), row.AnswerID, toStore(snap), driverData(snap), msg, nextPoll(at, snap, s.cfg), at)
	if err == nil && ok {
		s.auditMove(row, "answer_abandoned", snap.Status)
	}
	if err == nil && !ok {
		s.log.Warn("Discarded an MCP task answer's abandonment after lease ownership changed or expired; the answer stays pending", "task_id", row.ID)
	}
	return err
}
