package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"strings"
	"unicode/utf8"
)

// State is what a driver reports about a remote task at one moment. A
// driver may return any State; Normalize is the one boundary that checks
// and bounds it before it is stored.
type State struct {
	Status Status
	// Result is the task's result as JSON; nil means null.
	Result json.RawMessage
	// ResultPreview is the head of a result too large to store; nil when
	// there is none.
	ResultPreview *string
	// ResultTruncated is true when Result was dropped for ResultPreview.
	ResultTruncated bool
	// ResultArtifact points at a result kept elsewhere (the ordinary driver
	// fills uri and mime_type); nil means none.
	ResultArtifact map[string]string
	// Error is the task's error message; "" means none.
	Error string
	// InputRequired is the remote's question, a JSON object; required when
	// Status is input_required. nil means null.
	InputRequired json.RawMessage
	// PollAfterSeconds is the remote's hint for the next poll; nil for none.
	PollAfterSeconds *float64
	// DriverData, when non-nil, replaces the task's stored driver data,
	// persisted with the poll's (or answer's) state in the same write; nil
	// leaves it unchanged. A driver uses it to remember what it learns while
	// polling (a pending request id, say). Encoded, it is at most
	// MaxDriverDataBytes.
	DriverData map[string]string
}

// IsPollable reports whether the service keeps polling this task.
func (s State) IsPollable() bool { return s.Status.IsPollable() }

// NeedsAttention reports whether the user must be told about this state.
func (s State) NeedsAttention() bool { return s.Status.NeedsAttention() }

// Validate checks the state's invariants: a known status, a finite
// positive poll hint, and an input_required payload (a JSON object) when the
// status is input_required. Normalize calls it; drivers may too.
func (s State) Validate() error {
	if _, err := ParseStatus(string(s.Status)); err != nil {
		return err
	}
	if p := s.PollAfterSeconds; p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0) || *p <= 0) {
		return errors.New("poll_after_seconds must be a finite positive number")
	}
	if !isNull(s.InputRequired) && !isObject(s.InputRequired) {
		return errors.New("input_required must be a JSON object")
	}
	if s.Status == StatusInputRequired && isNull(s.InputRequired) {
		return errors.New("input_required status requires an input_required payload")
	}
	return nil
}

// Normalize validates s and applies the storage bounds, returning a copy
// that shares nothing with s:
//   - Error is made valid UTF-8 and cut to MaxErrorChars characters;
//   - ResultArtifact and InputRequired must be strict JSON (no NaN or
//     Infinity, valid UTF-8) of at most 64 KiB once compacted, or the task
//     fails: they are never truncated;
//   - Result must be strict JSON and is stored compacted; over
//     cfg.MaxResultBytes it is dropped for a preview of at most
//     cfg.ResultPreviewMaxChars characters (the string itself for a string
//     result, else its JSON text) and ResultTruncated is set;
//   - DriverData, when not nil, must encode to at most MaxDriverDataBytes;
//   - a literal JSON null counts as absent (nil).
//
// Every error is a *ProtocolError: the remote's output is unusable and the
// task must fail permanently. cfg must have passed Validate.
func Normalize(s State, cfg Config) (State, error) {
	if err := s.Validate(); err != nil {
		return State{}, &ProtocolError{Err: err}
	}
	out := State{
		Status:          s.Status,
		ResultTruncated: s.ResultTruncated,
		Error:           Truncate(strings.ToValidUTF8(s.Error, "\uFFFD"), MaxErrorChars),
	}
	if s.PollAfterSeconds != nil {
		v := *s.PollAfterSeconds
		out.PollAfterSeconds = &v
	}
	if s.ResultArtifact != nil {
		b, err := encodeStrict(s.ResultArtifact)
		if err != nil {
			return State{}, Protocolf("MCP task result_artifact is not valid JSON: %w", err)
		}
		if len(b) > MaxResultArtifactBytes {
			return State{}, Protocolf("MCP task result_artifact payload exceeds the %d-byte limit", MaxResultArtifactBytes)
		}
		out.ResultArtifact = maps.Clone(s.ResultArtifact)
	}
	if !isNull(s.InputRequired) {
		b, err := compactStrict(s.InputRequired)
		if err != nil {
			return State{}, Protocolf("MCP task input_required is not valid JSON: %w", err)
		}
		if len(b) > MaxInputRequiredBytes {
			return State{}, Protocolf("MCP task input_required payload exceeds the %d-byte limit", MaxInputRequiredBytes)
		}
		out.InputRequired = b
	}
	if s.DriverData != nil {
		b, err := encodeStrict(s.DriverData)
		if err != nil {
			return State{}, Protocolf("MCP task driver_data is not valid JSON: %w", err)
		}
		if len(b) > MaxDriverDataBytes {
			return State{}, Protocolf("MCP task driver_data exceeds the %d-byte limit", MaxDriverDataBytes)
		}
		out.DriverData = maps.Clone(s.DriverData)
	}
	if s.ResultPreview != nil {
		p := Truncate(strings.ToValidUTF8(*s.ResultPreview, "\uFFFD"), cfg.ResultPreviewMaxChars)
		out.ResultPreview = &p
	}
	if !isNull(s.Result) {
		b, err := compactStrict(s.Result)
		if err != nil {
			return State{}, Protocolf("MCP task result is not valid JSON: %w", err)
		}
		if len(b) <= cfg.MaxResultBytes {
			out.Result = b
		} else {
			p := Truncate(previewText(b), cfg.ResultPreviewMaxChars)
			out.ResultPreview = &p
			out.ResultTruncated = true
		}
	}
	return out, nil
}

// FailedState is the terminal state the service stores when a task
// fails permanently (a *ProtocolError): status failed and msg, bounded.
func FailedState(msg string) State {
	return State{Status: StatusFailed, Error: Truncate(strings.ToValidUTF8(msg, "\uFFFD"), MaxErrorChars)}
}

// Truncate returns the first maxChars characters (code points) of s,
// cutting only on character boundaries.
func Truncate(s string, maxChars int) string {
	if maxChars <= 0 {
		return ""
	}
	n := 0
	for i := range s {
		if n == maxChars {
			return s[:i]
		}
		n++
	}
	return s
}

// isNull reports whether raw is absent or the JSON literal null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// isObject reports whether raw looks like a JSON object; compactStrict
// checks the rest.
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// compactStrict returns raw without insignificant whitespace, after
// checking it is one valid JSON value in valid UTF-8. JSON has no NaN or
// Infinity, so such tokens fail here. Escapes are kept as sent; nothing is
// HTML-escaped.
func compactStrict(raw json.RawMessage) (json.RawMessage, error) {
	if !utf8.Valid(raw) {
		return nil, errors.New("invalid UTF-8")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeStrict encodes v compactly without HTML escaping.
func encodeStrict(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// previewText is the text a preview is cut from: the value itself for a
// JSON string, else the compact JSON text.
func previewText(compact []byte) string {
	if len(compact) > 0 && compact[0] == '"' {
		var s string
		if err := json.Unmarshal(compact, &s); err == nil {
			return s
		}
	}
	return string(compact)
}
