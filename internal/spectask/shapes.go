package spectask

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// Status messages of the spec Task (statusMessage).
const (
	msgWorking         = "Task is running in the background."
	msgCancelRequested = "Cancellation requested; Antler keeps retrying it until the remote server answers."
	msgInputRequired   = "The task needs input."
	msgAnswer20251125  = " Call tasks/result to be asked for it (the client must declare the elicitation capability), or answer it through Antler's REST task API."
	msgAnswer20260728  = " Answer its inputRequests with tasks/update."
	msgCannotAnswer    = " Antler cannot pass an answer on to this task's server; cancel the task or answer it on the server."
	msgRefused         = "The last answer was refused: "
	msgFailed          = "The task failed."
	msgCancelled       = "The task was cancelled."
)

// status is the spec status of a row in rev. Submitted and working are
// working. In 2025-11-25 a terminal status is final and tasks/cancel must
// answer with a cancelled task, so a task whose cancellation was asked for
// is cancelled from then on, however the remote ends it. In 2026-07-28 a
// tool result with isError is a completed task, and failed is only for
// JSON-RPC errors, which Antler's durable tasks never end in: a failed row
// is completed there, its result an error result.
func status(rev Revision, row taskstore.Task) string {
	st := task.Status(row.Status)
	switch {
	case rev == Rev20251125 && !row.CancelRequestedAt.IsZero():
		return "cancelled"
	case st == task.StatusSubmitted || st == task.StatusWorking:
		return "working"
	case rev == Rev20260728 && st == task.StatusFailed:
		return "completed"
	}
	return string(row.Status)
}

func terminalStatus(s string) bool {
	return s == "completed" || s == "failed" || s == "cancelled"
}

// statusMessage is the Task's statusMessage ("" for none); canAnswer is
// whether the task's driver takes answers (read only for a task waiting for
// input).
func statusMessage(rev Revision, row taskstore.Task, canAnswer func(taskstore.Task) bool) string {
	st := task.Status(row.Status)
	switch {
	case !row.CancelRequestedAt.IsZero() && !st.IsTerminal():
		return msgCancelRequested
	case st == task.StatusFailed:
		if row.Error != "" {
			return task.Truncate(row.Error, task.MaxPublicErrorChars)
		}
		return msgFailed
	case st == task.StatusCancelled || status(rev, row) == "cancelled":
		return msgCancelled
	case st == task.StatusInputRequired:
		msg := msgInputRequired
		switch {
		case !canAnswer(row):
			msg += msgCannotAnswer
		case rev == Rev20260728:
			msg += msgAnswer20260728
		default:
			msg += msgAnswer20251125
		}
		if row.AnswerStatus == taskstore.AnswerRefused && row.AnswerError != "" {
			msg += " " + msgRefused + task.Truncate(row.AnswerError, task.MaxPublicErrorChars)
		}
		return msg
	case st.IsPollable() && row.LastPollError != "":
		return msgWorking + " Its last status check failed: " + task.Truncate(row.LastPollError, task.MaxPublicErrorChars)
	case st.IsPollable():
		return msgWorking
	}
	return ""
}

// timestamp is an RFC 3339 time in UTC (stored times are milliseconds).
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// pollInterval is the runtime's own cadence for a running task, in
// milliseconds: from its last poll (or creation) to its next one, which
// already follows the remote's poll_after_seconds hint and any backoff.
// Finished tasks have none (0).
func pollInterval(row taskstore.Task) int64 {
	if !task.Status(row.Status).IsPollable() || row.NextPollAt.IsZero() {
		return 0
	}
	from := row.CreatedAt
	if row.LastPolledAt.After(from) {
		from = row.LastPolledAt
	}
	return max(row.NextPollAt.Sub(from).Milliseconds(), 1)
}

// taskOf is the spec Task of row in rev. ttl is null: Antler keeps task rows
// without a time limit.
func (s *Service) taskOf(rev Revision, row taskstore.Task) map[string]any {
	ttlKey, pollKey := "ttl", "pollInterval"
	if rev == Rev20260728 {
		ttlKey, pollKey = "ttlMs", "pollIntervalMs"
	}
	t := map[string]any{
		"taskId":        row.ID,
		"status":        status(rev, row),
		"createdAt":     timestamp(row.CreatedAt),
		"lastUpdatedAt": timestamp(row.UpdatedAt),
		ttlKey:          nil,
	}
	if msg := statusMessage(rev, row, s.ts.CanAnswer); msg != "" {
		t["statusMessage"] = msg
	}
	if p := pollInterval(row); p > 0 {
		t[pollKey] = p
	}
	return t
}

// detailOf is the 2026-07-28 DetailedTask: the Task, plus the result once
// completed (a failed row's error result included) and inputRequests while
// input_required.
func (s *Service) detailOf(row taskstore.Task) map[string]any {
	d := s.taskOf(Rev20260728, row)
	switch {
	case d["status"] == "completed":
		d["result"] = resultOf(row)
	case row.Status == task.StatusInputRequired:
		d["inputRequests"] = map[string]any{InputRequestID(row): map[string]any{
			"method": methodElicit,
			"params": elicitationOf(row),
		}}
	}
	return d
}

// methodElicit is the one kind of input request Antler's tasks make.
const methodElicit = "elicitation/create"

// InputRequestID is the id under which the question of row, a task waiting
// for input, is listed in the 2026-07-28 inputRequests and answered with
// tasks/update (a 2025-11-25 tasks/result asks each question once by it).
// It is derived from the stored question and the id of
// the answer before it, so it names that one question: unique over the
// task's life (every answer has a fresh id, so a question asked again after
// an answer, or given back after a refusal, gets a new one) and the same on
// every replica and after a restart, with nothing more stored.
func InputRequestID(row taskstore.Task) string {
	h := sha256.New()
	h.Write([]byte(row.ID))
	h.Write([]byte{0})
	h.Write([]byte(row.AnswerID))
	h.Write([]byte{0})
	h.Write(row.InputRequired)
	return inputIDPrefix + hex.EncodeToString(h.Sum(nil)[:12])
}

// inputIDPrefix starts every input request id.
const inputIDPrefix = "antler-input-"

// answerSchema is the form asked for when the remote's question carries no
// schema of its own: one free-text answer.
var answerSchema = map[string]any{"type": "object",
	"properties": map[string]any{"answer": map[string]any{"type": "string", "title": "Answer", "description": "Your answer to the question."}},
	"required":   []string{"answer"}}

// elicitationOf renders the stored question of row as form-mode
// elicitation/create params: a question that is an elicitation itself (a
// spec-task remote's, with "message" and "requestedSchema") as it was
// asked, any other (the ordinary contract's input_required payload) as its
// "question", "message" or JSON text, with a one-field free-text form.
func elicitationOf(row taskstore.Task) map[string]any {
	var q struct {
		Message         string          `json:"message"`
		Question        string          `json:"question"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	_ = json.Unmarshal(row.InputRequired, &q)
	msg := q.Message
	if msg == "" {
		msg = q.Question
	}
	if msg == "" {
		msg = string(row.InputRequired)
	}
	if msg == "" || msg == "null" {
		msg = "The task needs input."
	}
	var schema any = answerSchema
	if t := bytes.TrimSpace(q.RequestedSchema); len(t) > 0 && t[0] == '{' {
		schema = q.RequestedSchema
	}
	return map[string]any{"mode": "form", "message": msg, "requestedSchema": schema}
}

// resultOf is the CallToolResult a finished row stands for. A completed
// task's result is its text (a JSON string result as the string itself,
// any other as its JSON), with an object result also as
// structuredContent, the preview of a result too large to keep, and a
// resource_link to its artifact. A failed task is an error result with its
// error; a cancelled one an error result saying so.
func resultOf(row taskstore.Task) map[string]any {
	switch {
	case row.Status == task.StatusFailed:
		msg := row.Error
		if msg == "" {
			msg = msgFailed
		}
		return errorResult(task.Truncate(msg, task.MaxPublicErrorChars))
	case row.Status != task.StatusCompleted:
		return errorResult(msgCancelled)
	}
	content := []map[string]any{}
	res := map[string]any{}
	switch {
	case len(row.Result) > 0:
		var text string
		if err := json.Unmarshal(row.Result, &text); err != nil {
			text = string(row.Result)
		}
		content = append(content, textContent(text))
		if t := bytes.TrimSpace(row.Result); len(t) > 0 && t[0] == '{' {
			res["structuredContent"] = row.Result
		}
	case row.ResultTruncated:
		content = append(content, textContent(row.ResultPreview+"\n[The result was too large to keep; this is its beginning.]"))
	}
	var art map[string]string
	if len(row.ResultArtifact) > 0 && json.Unmarshal(row.ResultArtifact, &art) == nil && art["uri"] != "" {
		link := map[string]any{"type": "resource_link", "uri": art["uri"], "name": row.TaskName}
		if art["mime_type"] != "" {
			link["mimeType"] = art["mime_type"]
		}
		content = append(content, link)
	}
	res["content"] = content
	return res
}

func textContent(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func errorResult(msg string) map[string]any {
	return map[string]any{"content": []map[string]any{textContent(msg)}, "isError": true}
}
