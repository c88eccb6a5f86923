package task

import (
	"context"
	"encoding/json"
	"fmt"
)

// Answer actions, as in an MCP elicitation result.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// MaxAnswerBytes bounds an answer's content once compacted.
const MaxAnswerBytes = 65536

// Answer is a user's reply to a task's input_required question, in the shape of an elicitation result.
type Answer struct {
	Action  string          `json:"action"`            // "accept", "decline" or "cancel"
	Content json.RawMessage `json:"content,omitempty"` // with accept: a JSON object
	ID      string          `json:"-"`                 // the store's id of this answer, stable across redeliveries (an idempotency key)
}

// Validate checks Action and Content's shape; errors name the field.
// Accept needs Content, a JSON object of at most MaxAnswerBytes; decline
// and cancel carry none. The content is the user's data: no error quotes it.
func (a Answer) Validate() error {
	switch a.Action {
	case ActionAccept:
		if isNull(a.Content) {
			return fmt.Errorf("content: required when action is '%s'", ActionAccept)
		}
		if !isObject(a.Content) {
			return fmt.Errorf("content: must be a JSON object")
		}
		b, err := compactStrict(a.Content)
		if err != nil {
			return fmt.Errorf("content: must be valid JSON")
		}
		if len(b) > MaxAnswerBytes {
			return fmt.Errorf("content: must not exceed %d bytes", MaxAnswerBytes)
		}
	case ActionDecline, ActionCancel:
		if !isNull(a.Content) {
			return fmt.Errorf("content: must be omitted unless action is '%s'", ActionAccept)
		}
	default:
		return fmt.Errorf("action: must be one of '%s', '%s', '%s'", ActionAccept, ActionDecline, ActionCancel)
	}
	return nil
}

// Answerer is a Driver that can deliver answers. question is the task's stored InputRequired.
// A *ProtocolError refuses the answer for good; any other error is retried under the lease.
//
// The service may deliver one answer more than once (a host that dies
// after the remote took it, before the returned State was stored,
// delivers it again from another process): a driver passes a.ID on as the
// remote's idempotency key, so a repeat has no further effect.
type Answerer interface {
	Answer(ctx context.Context, ref Reference, question json.RawMessage, a Answer) (State, error)
}

// AnswerChecker is an optional Answerer refinement for drivers that take
// answers for some tasks only (the ordinary driver, for toolsets with a
// respond_tool). The service asks it before recording an answer and when it
// tells the user how to give one.
type AnswerChecker interface {
	CanAnswer(ref Reference) bool
}

// CanAnswer reports whether d can take answers for the task ref: it is an
// Answerer and, if it is an AnswerChecker, says yes for ref.
func CanAnswer(d Driver, ref Reference) bool {
	if _, ok := d.(Answerer); !ok {
		return false
	}
	if c, ok := d.(AnswerChecker); ok {
		return c.CanAnswer(ref)
	}
	return true
}

// AbandonedError is an Answerer's report that the remote no longer waits
// for the answer (its question is gone: it gave up on it, or a connection
// it lived on ended): the answer is settled as abandoned, with Reason as
// its error, and State, the task's state now, is stored as a poll's.
type AbandonedError struct {
	Reason string
	State  State
}

func (e *AbandonedError) Error() string { return "the answer was abandoned: " + e.Reason }
