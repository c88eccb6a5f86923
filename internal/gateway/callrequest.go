package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/antler-mcp/antler/internal/jsonscan"
	"github.com/antler-mcp/antler/internal/workspace"
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
	if fields, ok := scanCallFields(body); ok {
		for i, v := range fields {
			if v != nil {
				if err := req.set(callFieldNames[i], v); err != nil {
					return req, err
				}
			}
		}
		return req, nil
	}
	return parseDecoded(req, body)
}

// parseDecoded is ParseCallRequest for any body: decoded, so that what is
// wrong is named.
func parseDecoded(req CallRequest, body []byte) (CallRequest, error) {
	var fields map[string]json.RawMessage
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
	for k, v := range fields {
		if err := req.set(k, v); err != nil {
			return req, err
		}
	}
	return req, nil
}

// callFieldNames are the fields of a call body, in scanCallFields' order.
var callFieldNames = [...]string{"arguments", "thread_id", "user_id", "secrets"}

// scanCallFields finds the fields of a body that is one valid JSON object
// whose keys are all known and unescaped (the usual body) without decoding
// it: each is the last value given for it, a slice of body, or nil. Any
// other body is not ok, and ParseCallRequest decodes it to say what is wrong.
func scanCallFields(body []byte) (fields [len(callFieldNames)]json.RawMessage, ok bool) {
	if !jsonscan.Valid(body) {
		return fields, false
	}
	ok = jsonscan.Members(body, func(key, value []byte) bool {
		for n, name := range callFieldNames {
			if string(key) == name {
				fields[n] = value
				return true
			}
		}
		return false
	})
	return fields, ok
}

// set validates one field of a call body and keeps it.
func (req *CallRequest) set(k string, v json.RawMessage) error {
	switch k {
	case "arguments":
		if isNull(v) {
			return nil
		}
		if !isObject(v) {
			return badRequest("arguments: must be a JSON object")
		}
		req.Arguments = v
	case "thread_id":
		s, err := optionalString(k, v)
		if err != nil {
			return err
		}
		if s != "" {
			if err := workspace.CheckID(s); err != nil {
				return badRequest("thread_id: %v", err)
			}
		}
		req.ThreadID = s
	case "user_id":
		s, err := optionalString(k, v)
		if err != nil {
			return err
		}
		if s != "" {
			if err := workspace.CheckID(s); err != nil {
				return badRequest("user_id: %v", err)
			}
		}
		req.UserID = s
	case "secrets":
		if isNull(v) {
			return nil
		}
		var raw map[string]json.RawMessage
		if !isObject(v) || json.Unmarshal(v, &raw) != nil {
			return badRequest("secrets: must be a JSON object of strings")
		}
		req.Secrets = make(map[string]string, len(raw))
		for name, sv := range raw {
			var s string
			if json.Unmarshal(sv, &s) != nil {
				return badRequest("secrets.%s: must be a string", name)
			}
			req.Secrets[name] = s
		}
	default:
		return badRequest("unknown field %q (allowed: arguments, thread_id, secrets, user_id)", truncateField(k))
	}
	return nil
}

func optionalString(field string, v json.RawMessage) (string, error) {
	if isNull(v) {
		return "", nil
	}
	if plainString(v) {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", badRequest("%s: must be a string", field)
	}
	return s, nil
}

// plainString reports whether v is a JSON string of printable ASCII without
// escapes, which decodes to its bytes between the quotes.
func plainString(v json.RawMessage) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func isObject(v json.RawMessage) bool {
	t := bytes.TrimSpace(v)
	return len(t) > 0 && t[0] == '{'
}
