package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/antler-mcp/antler/host/settings"
)

// CallRequest is the body of POST /api/mcp/tools/{name}/call.
type CallRequest struct {
	// Arguments is the tool's input as a JSON object (raw, passed through).
	Arguments json.RawMessage
	ThreadID  string
	// Secrets are per-request credential values (never logged).
	Secrets map[string]string
	// UserID is honoured only for internal principals.
	UserID string
}

// BadRequest is a malformed call body; its message names the field.
type BadRequest struct{ Message string }

func (e *BadRequest) Error() string { return e.Message }

func badRequest(format string, args ...any) error {
	return &BadRequest{Message: fmt.Sprintf(format, args...)}
}

// ParseCallRequest validates a call body. An empty body means no arguments.
// Unknown fields are refused so a typo ("args") is not silently a call
// without arguments. Messages name fields, never values.
func ParseCallRequest(body []byte) (CallRequest, error) {
	req := CallRequest{Arguments: json.RawMessage("{}")}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	var fields map[string]json.RawMessage
	// A body that is one JSON value decodes without a stream decoder; any
	// other is decoded again with one, whose errors say more.
	if err := json.Unmarshal(body, &fields); err != nil {
		fields = nil
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&fields); err != nil {
			return req, badRequest("request body must be a JSON object: %s", jsonProblem(err))
		}
		if fields == nil {
			return req, badRequest("request body must be a JSON object, got null")
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return req, badRequest("request body has data after the JSON object")
		}
		return req, badRequest("request body must be a JSON object: %s", jsonProblem(err)) // (not reached: Unmarshal failed)
	}
	if fields == nil {
		return req, badRequest("request body must be a JSON object, got null")
	}
	for k, v := range fields {
		switch k {
		case "arguments":
			if isNull(v) {
				continue
			}
			if !isObject(v) {
				return req, badRequest("arguments: must be a JSON object")
			}
			req.Arguments = v
		case "thread_id":
			s, err := optionalString(k, v)
			if err != nil {
				return req, err
			}
			if s != "" {
				if err := settings.ValidateUserID(s); err != nil {
					return req, badRequest("thread_id: %v", err)
				}
			}
			req.ThreadID = s
		case "user_id":
			s, err := optionalString(k, v)
			if err != nil {
				return req, err
			}
			if s != "" {
				if err := settings.ValidateUserID(s); err != nil {
					return req, badRequest("user_id: %v", err)
				}
			}
			req.UserID = s
		case "secrets":
			if isNull(v) {
				continue
			}
			var raw map[string]json.RawMessage
			if !isObject(v) || json.Unmarshal(v, &raw) != nil {
				return req, badRequest("secrets: must be a JSON object of strings")
			}
			req.Secrets = make(map[string]string, len(raw))
			for name, sv := range raw {
				var s string
				if json.Unmarshal(sv, &s) != nil {
					return req, badRequest("secrets.%s: must be a string", name)
				}
				req.Secrets[name] = s
			}
		default:
			return req, badRequest("unknown field %q (allowed: arguments, thread_id, secrets, user_id)", truncateField(k))
		}
	}
	return req, nil
}

func optionalString(field string, v json.RawMessage) (string, error) {
	if isNull(v) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", badRequest("%s: must be a string", field)
	}
	return s, nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func isObject(v json.RawMessage) bool {
	t := bytes.TrimSpace(v)
	return len(t) > 0 && t[0] == '{'
}

func truncateField(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// jsonProblem describes a decoding error by position and kind, without
// quoting the input.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("got a JSON %s", typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
