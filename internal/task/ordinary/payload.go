package ordinary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/antler-mcp/antler/internal/task"
)

// mapStatus maps a remote status the schema accepted to the snapshot
// status: running is working, the others keep their names.
func mapStatus(remote string) task.Status {
	if remote == "running" {
		return task.StatusWorking
	}
	return task.Status(remote)
}

// notFoundCode is the error_code with which a status tool says it no
// longer knows the task.
const notFoundCode = "task_not_found"

// notFoundMessage is the task's error when such an answer carries none.
const notFoundMessage = "Remote MCP task was not found"

// submitPayload is the submit tool's structuredContent.
type submitPayload struct {
	TaskID string
}

// statusPayload is the status or cancel tool's structuredContent.
type statusPayload struct {
	TaskID           string
	Status           string
	Result           json.RawMessage
	ResultArtifact   map[string]string
	Error            string
	ErrorCode        string
	InputRequired    json.RawMessage
	PollAfterSeconds *float64
}

// parseSubmit reads {task_id: non-empty string, status: "running"}. The
// id's length is the service's to check, so an oversized one is cancelled.
func parseSubmit(content []byte) (submitPayload, error) {
	o, err := decodeObject(content)
	if err != nil {
		return submitPayload{}, err
	}
	id, err := o.requiredString("task_id", 0)
	if err != nil {
		return submitPayload{}, err
	}
	if _, err := o.enum("status", "running"); err != nil {
		return submitPayload{}, err
	}
	return submitPayload{TaskID: id}, nil
}

// parseStatus reads the status tool's answer.
func parseStatus(content []byte) (statusPayload, error) {
	o, err := decodeObject(content)
	if err != nil {
		return statusPayload{}, err
	}
	p, err := o.common("running", "input_required", "completed", "failed", "cancelled")
	if err != nil {
		return statusPayload{}, err
	}
	if p.ErrorCode, err = o.optionalString("error_code"); err != nil {
		return statusPayload{}, err
	}
	if p.InputRequired, err = o.optionalObject("input_required"); err != nil {
		return statusPayload{}, err
	}
	if p.PollAfterSeconds, err = o.optionalPositive("poll_after_seconds"); err != nil {
		return statusPayload{}, err
	}
	return p, nil
}

// refusedCode is the error_code with which a respond tool refuses an
// answer for good.
const refusedCode = "answer_refused"

// refusedMessage is the refusal's text when such an answer carries none.
const refusedMessage = "The remote MCP task refused the answer"

// parseRespond reads the respond tool's answer: a status answer.
func parseRespond(content []byte) (statusPayload, error) { return parseStatus(content) }

// parseCancel reads the cancel tool's answer, which must be terminal.
func parseCancel(content []byte) (statusPayload, error) {
	o, err := decodeObject(content)
	if err != nil {
		return statusPayload{}, err
	}
	return o.common("cancelled", "completed", "failed")
}

// snapshot maps the payload to a task snapshot.
func (p statusPayload) snapshot() (task.State, error) {
	if p.ErrorCode == notFoundCode {
		msg := p.Error
		if msg == "" {
			msg = notFoundMessage
		}
		return task.State{Status: task.StatusFailed, Error: msg}, nil
	}
	st := mapStatus(p.Status)
	if st == task.StatusInputRequired && p.InputRequired == nil {
		return task.State{}, errors.New("input_required: field required when status is 'input_required'")
	}
	return task.State{
		Status:           st,
		Result:           p.Result,
		ResultArtifact:   p.ResultArtifact,
		Error:            p.Error,
		InputRequired:    p.InputRequired,
		PollAfterSeconds: p.PollAfterSeconds,
	}, nil
}

// object is a decoded JSON object; unknown keys are simply never read.
type object map[string]json.RawMessage

func decodeObject(content []byte) (object, error) {
	var o object
	if !isObject(content) || json.Unmarshal(content, &o) != nil {
		return nil, errors.New("structuredContent must be a JSON object")
	}
	return o, nil
}

// common reads the fields status and cancel answers share.
func (o object) common(statuses ...string) (statusPayload, error) {
	var p statusPayload
	var err error
	if p.TaskID, err = o.requiredString("task_id", task.MaxRemoteTaskIDChars); err != nil {
		return p, err
	}
	if p.Status, err = o.enum("status", statuses...); err != nil {
		return p, err
	}
	if !isNull(o["result"]) {
		p.Result = o["result"]
	}
	if p.ResultArtifact, err = o.artifact("result_artifact"); err != nil {
		return p, err
	}
	if p.Error, err = o.optionalString("error"); err != nil {
		return p, err
	}
	return p, nil
}

// requiredString reads a non-empty string of at most maxChars characters
// (0: no limit).
func (o object) requiredString(key string, maxChars int) (string, error) {
	raw, ok := o[key]
	if !ok {
		return "", fmt.Errorf("%s: field required", key)
	}
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%s: must be a string", key)
	}
	if s == "" {
		return "", fmt.Errorf("%s: must not be empty", key)
	}
	if maxChars > 0 && utf8.RuneCountInString(s) > maxChars {
		return "", fmt.Errorf("%s: must not exceed %d characters", key, maxChars)
	}
	return s, nil
}

// optionalString reads a string that may be absent or null ("").
func (o object) optionalString(key string) (string, error) {
	raw := o[key]
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%s: must be a string", key)
	}
	return s, nil
}

// enum reads a required string that must be one of allowed.
func (o object) enum(key string, allowed ...string) (string, error) {
	s, err := o.requiredString(key, 0)
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		return "", fmt.Errorf("%s: must be one of '%s', got '%s'", key, strings.Join(allowed, "', '"), s)
	}
	return s, nil
}

// optionalObject reads a JSON object that may be absent or null (nil).
func (o object) optionalObject(key string) (json.RawMessage, error) {
	raw := o[key]
	if isNull(raw) {
		return nil, nil
	}
	if !isObject(raw) {
		return nil, fmt.Errorf("%s: must be an object", key)
	}
	return raw, nil
}

// optionalPositive reads a finite number > 0 that may be absent or null.
func (o object) optionalPositive(key string) (*float64, error) {
	raw := o[key]
	if isNull(raw) {
		return nil, nil
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return nil, fmt.Errorf("%s: must be a finite number greater than 0", key)
	}
	return &v, nil
}

// artifact reads {uri, mime_type}, both non-empty strings, keeping only
// those two keys; absent or null gives nil.
func (o object) artifact(key string) (map[string]string, error) {
	raw := o[key]
	if isNull(raw) {
		return nil, nil
	}
	a, err := decodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: must be an object", key)
	}
	out := make(map[string]string, 2)
	for _, k := range []string{"uri", "mime_type"} {
		v, err := a.requiredString(k, 0)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", key, err)
		}
		out[k] = v
	}
	return out, nil
}

// isNull reports whether raw is absent or the JSON literal null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// isObject reports whether raw starts like a JSON object.
func isObject(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}
