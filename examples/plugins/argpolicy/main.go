// Command argpolicy is an example Antler interceptor: it denies tool calls
// whose arguments match a configured pattern, with a message for the model.
//
// Build:  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o argpolicy.wasm .
//
// Config:
//
//	{"deny": [
//	  {"tool": "*_exec", "pattern": "rm\\s+-rf", "message": "Recursive deletes are not allowed."},
//	  {"pattern": "(?i)drop\\s+table"}
//	]}
//
// tool (optional) is matched against both the exposed and the upstream tool
// name; "*" matches any run of characters. pattern is a Go regular expression
// searched for in the raw arguments JSON, as the agent sent it (so a quote
// inside a string value appears as \"). The first matching rule denies the
// call with its message, or "This call was blocked by policy.". A config that
// does not parse, or a pattern that does not compile, fails every call closed:
// a broken policy must not let calls through.
package main

import (
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/antler-mcp/antler/sdk"
)

// DefaultMessage is the denial text of a rule without a message.
const DefaultMessage = "This call was blocked by policy."

type rule struct {
	tool    string // glob; "" matches every tool
	pattern *regexp.Regexp
	message string
}

type policy struct {
	rules []rule
	err   string // the config is unusable: fail every call
}

// policies caches compiled configs by their bytes: a module instance serves
// one entry, so there is one config in practice, and decoding JSON and
// compiling regexps inside Wasm is the slow part of a call. The bound only
// keeps a misbehaving host from growing it.
var policies = map[string]*policy{}

const maxPolicies = 16

func compiled(raw []byte) *policy {
	if p, ok := policies[string(raw)]; ok {
		return p
	}
	p := compile(raw)
	if len(policies) >= maxPolicies {
		clear(policies)
	}
	policies[string(raw)] = p
	return p
}

func compile(raw []byte) *policy {
	var cfg struct {
		Deny []struct {
			Tool    string `json:"tool"`
			Pattern string `json:"pattern"`
			Message string `json:"message"`
		} `json:"deny"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return &policy{err: "argpolicy: config: " + err.Error()}
		}
	}
	p := &policy{}
	for i, d := range cfg.Deny {
		if d.Pattern == "" {
			return &policy{err: fmt.Sprintf("argpolicy: config deny[%d].pattern: is required", i)}
		}
		re, err := regexp.Compile(d.Pattern)
		if err != nil {
			return &policy{err: fmt.Sprintf("argpolicy: config deny[%d].pattern: %v", i, err)}
		}
		msg := d.Message
		if msg == "" {
			msg = DefaultMessage
		}
		p.rules = append(p.rules, rule{tool: d.Tool, pattern: re, message: msg})
	}
	return p
}

// globMatch reports whether name matches pattern, where '*' matches any run
// of characters (none included) and every other character itself.
func globMatch(pattern, name string) bool {
	// Iterative matching with backtracking to the last star: linear in
	// practice, no recursion.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func (r *rule) applies(req *sdk.Request) bool {
	return r.tool == "" || globMatch(r.tool, req.Tool) || globMatch(r.tool, req.OriginalTool)
}

func intercept(req *sdk.Request) sdk.Response {
	p := compiled(req.Config)
	if p.err != "" {
		return sdk.Response{Error: p.err}
	}
	args := req.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	for i := range p.rules {
		r := &p.rules[i]
		if r.applies(req) && r.pattern.Match(args) {
			return sdk.Deny(r.message)
		}
	}
	return sdk.Continue()
}

func init() { sdk.HandleIntercept(intercept) }

func main() {}
