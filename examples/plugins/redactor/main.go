// Command redactor is an example Antler result hook: it replaces every match
// of configured regular expressions in a tool's result with "[REDACTED]"
// before the agent sees it.
//
// Build:  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o redactor.wasm .
//
// Config: {"patterns": ["sk-[A-Za-z0-9]+", "AKIA[0-9A-Z]{16}"], "replacement": "[REDACTED]"}
//
// It rewrites the text of every content item (content[].text, and the text
// of an embedded resource, content[].resource.text) and every string value,
// at any depth, in structuredContent. Everything else in the CallToolResult
// is kept as it was, and a result with nothing to redact is passed through
// byte for byte. A config that does not parse or compile, or a result that is
// not a JSON object, fails the call closed: the agent never sees unredacted
// text by accident.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/antler-mcp/antler/sdk"
)

// DefaultReplacement replaces each match when the config names none.
const DefaultReplacement = "[REDACTED]"

type redactor struct {
	patterns    []*regexp.Regexp
	replacement string
	err         string
}

// redactors caches compiled configs by their bytes (see argpolicy).
var redactors = map[string]*redactor{}

const maxRedactors = 16

func compiled(raw []byte) *redactor {
	if r, ok := redactors[string(raw)]; ok {
		return r
	}
	r := compile(raw)
	if len(redactors) >= maxRedactors {
		clear(redactors)
	}
	redactors[string(raw)] = r
	return r
}

func compile(raw []byte) *redactor {
	var cfg struct {
		Patterns    []string `json:"patterns"`
		Replacement *string  `json:"replacement"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return &redactor{err: "redactor: config: " + err.Error()}
		}
	}
	r := &redactor{replacement: DefaultReplacement}
	if cfg.Replacement != nil {
		r.replacement = *cfg.Replacement
	}
	for i, p := range cfg.Patterns {
		if p == "" {
			return &redactor{err: fmt.Sprintf("redactor: config patterns[%d]: must not be empty", i)}
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return &redactor{err: fmt.Sprintf("redactor: config patterns[%d]: %v", i, err)}
		}
		r.patterns = append(r.patterns, re)
	}
	return r
}

// text redacts one string; changed reports whether anything matched.
func (r *redactor) text(s string) (string, bool) {
	changed := false
	for _, re := range r.patterns {
		if re.MatchString(s) {
			// Literal: a "$1" in the replacement is not a group reference.
			s = re.ReplaceAllLiteralString(s, r.replacement)
			changed = true
		}
	}
	return s, changed
}

// value redacts every string in a decoded JSON value, in place where it can.
func (r *redactor) value(v any) (any, bool) {
	switch t := v.(type) {
	case string:
		return r.text(t)
	case []any:
		changed := false
		for i, e := range t {
			var c bool
			if t[i], c = r.value(e); c {
				changed = true
			}
		}
		return t, changed
	case map[string]any:
		changed := false
		for k, e := range t {
			var c bool
			if t[k], c = r.value(e); c {
				changed = true
			}
		}
		return t, changed
	}
	return v, false // numbers (json.Number), booleans, null
}

// field redacts one top-level field of the result, returning its new JSON
// (nil when nothing changed).
func (r *redactor) field(raw json.RawMessage, redact func(any) (any, bool)) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers exactly as they were
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	v, changed := redact(v)
	if !changed {
		return nil, nil
	}
	return encode(v)
}

// encode is json.Marshal without HTML escaping: "<" stays "<" in the text
// the agent reads.
func encode(v any) ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}

// content redacts content[].text and content[].resource.text.
func (r *redactor) content(v any) (any, bool) {
	items, ok := v.([]any)
	if !ok {
		return v, false
	}
	changed := false
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		if s, ok := m["text"].(string); ok {
			if red, c := r.text(s); c {
				m["text"], changed = red, true
			}
		}
		if res, ok := m["resource"].(map[string]any); ok {
			if s, ok := res["text"].(string); ok {
				if red, c := r.text(s); c {
					res["text"], changed = red, true
				}
			}
		}
	}
	return items, changed
}

func onResult(req *sdk.ResultRequest) sdk.ResultResponse {
	r := compiled(req.Config)
	if r.err != "" {
		return sdk.ResultResponse{Error: r.err}
	}
	if len(r.patterns) == 0 {
		return sdk.ResultResponse{}
	}
	var result map[string]json.RawMessage
	if err := json.Unmarshal(req.Result, &result); err != nil || result == nil {
		return sdk.ResultResponse{Error: "redactor: the result is not a JSON object"}
	}
	changed := false
	for _, f := range []struct {
		name   string
		redact func(any) (any, bool)
	}{{"content", r.content}, {"structuredContent", r.value}} {
		out, err := r.field(result[f.name], f.redact)
		if err != nil {
			return sdk.ResultResponse{Error: "redactor: " + f.name + ": " + err.Error()}
		}
		if out != nil {
			result[f.name], changed = out, true
		}
	}
	if !changed {
		return sdk.ResultResponse{}
	}
	out, err := encode(result)
	if err != nil {
		return sdk.ResultResponse{Error: "redactor: " + err.Error()}
	}
	return sdk.ResultResponse{Result: out}
}

func init() { sdk.HandleResult(onResult) }

func main() {}
