package task

import (
	"context"
	"encoding/json"
)

// TODO(merge): a local copy of the answer interface the answers branch adds
// to this package in parallel; delete this file when that branch lands.

// Answer is a user's answer to a task's input_required question, in an
// elicitation answer's shape.
type Answer struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
	ID      string          `json:"-"`
}

// Answerer is a driver that can deliver an answer to its remote task.
type Answerer interface {
	Answer(ctx context.Context, ref Reference, question json.RawMessage, a Answer) (Snapshot, error)
}
