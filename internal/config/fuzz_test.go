package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
)

// fuzzSecret is what every $VAR resolves to while fuzzing.
const fuzzSecret = "FUZZ-SECRET-VALUE"

// FuzzParse checks properties that must hold for any input: Parse never
// panics; a parsed configuration marshals to a document that parses again
// to the same servers; and no error, warning or problem shows a resolved
// variable.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "valid", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		``,
		`null`,
		`{"mcpServers": {"x": {"routing": {"mode": "$M", "priority": -5, "keywords": ["$K"]}, "tools": {"t": {"routing": {"mode": "$M"}}}}}}`,
		`{"mcpServers": {"x": {"type": "http", "url": "$U", "task_toolsets": [{"name": "$N", "submit_tool": "$S", "status_tool": "$S", "cancel_tool": "c"}]}}}`,
		`{"mcpServers": {"x": {"transport": "$T", "headers": {"A": "$H", "a": "$H"}, "oauth": {"grant_type": "$G"}, "user_auth": {"on_missing": "$O", "header": " "}}}}`,
		`{"mcp_servers": {"y": {"command": "$C", "session_init_timeout": null, "tool_call_timeout": 0.5, "protocol_version": "$P"}}, "mcpInterceptors": "$I"}`,
		`{"mcpServers": {"z": {"type": "sse", "url": "u", "headers_from_context": {"headers": {"X": "$K", " ": "k"}, "on_missing": "$O"}}}, "skills": {"s": {"enabled": "$E"}}}`,
		`{"a": {"b": [1, 2.5e3, -0, true, null, "$X", {"c": "\u0000"}]}, "mcpServers": {"q": {"command": "c", "x": "$X"}}}`,
	} {
		f.Add([]byte(seed))
	}

	lookup := constant(fuzzSecret)
	f.Fuzz(func(t *testing.T, data []byte) {
		ext, err := config.Parse(data, lookup)
		// A document that spells the secret itself may echo it legitimately.
		checkSecret := !spellsSecret(data)
		if checkSecret {
			noSecret(t, "error", errText(err))
		}
		if err != nil {
			if ext != nil {
				t.Fatal("Parse returned both a configuration and an error")
			}
			var syn *config.SyntaxError
			var p config.Problems
			if !errors.As(err, &syn) && !errors.As(err, &p) {
				t.Fatalf("error of unexpected type %T: %v", err, err)
			}
			return
		}
		if checkSecret {
			for _, w := range ext.Warnings {
				noSecret(t, "warning", w)
			}
			for _, s := range ext.Servers {
				if s.Problem != nil {
					noSecret(t, "problem", s.Problem.Error())
				}
			}
		}
		_ = ext.MCPDigest()

		out, err := json.Marshal(ext)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, err := config.Parse(out, lookup)
		if err != nil {
			t.Fatalf("the marshalled configuration does not parse: %v\ninput:  %q\noutput: %s", err, data, out)
		}
		if len(again.Servers) != len(ext.Servers) {
			t.Fatalf("round trip has %d servers, want %d", len(again.Servers), len(ext.Servers))
		}
		exact := true
		for i, s := range ext.Servers {
			a := again.Servers[i]
			if a.Name != s.Name {
				t.Fatalf("server %d renamed over the round trip: %q → %q", i, s.Name, a.Name)
			}
			if !exactSeconds(s.ToolCallTimeout) || !exactSeconds(s.SessionInitTimeout) {
				exact = false
				continue
			}
			if !bytes.Equal(a.Slice(), s.Slice()) {
				t.Fatalf("server %q changed over the round trip:\n before %s\n after  %s\ninput: %q", s.Name, s.Slice(), a.Slice(), data)
			}
		}
		if exact && again.MCPDigest() != ext.MCPDigest() {
			t.Fatal("MCPDigest changed over the round trip")
		}
	})
}

// spellsSecret reports whether the document itself contains the secret
// text, in a key or a string (possibly written with \u escapes).
func spellsSecret(data []byte) bool {
	if bytes.Contains(data, []byte(fuzzSecret)) {
		return true
	}
	tree, err := config.ParseJSON(data)
	if err != nil {
		return false // a syntax error never reaches substitution
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch t := v.(type) {
		case *config.Object:
			for _, k := range t.Keys() {
				e, _ := t.Get(k)
				if strings.Contains(k, fuzzSecret) || walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range t {
				if walk(e) {
					return true
				}
			}
		case string:
			return strings.Contains(t, fuzzSecret)
		}
		return false
	}
	return walk(tree)
}

// exactSeconds reports whether d survives being written as float64 seconds
// and read back to the nanosecond: true below 2^51 ns (about 26 days). Longer
// timeouts may move by a nanosecond, which no one can observe.
func exactSeconds(d time.Duration) bool { return d < 1<<51 }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func noSecret(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, fuzzSecret) {
		t.Fatalf("%s shows a resolved variable: %q", what, text)
	}
}
