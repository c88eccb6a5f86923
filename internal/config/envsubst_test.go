package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

// TestVariableSubstitution covers DeerFlow's whole-string $VAR rule: only a string that starts with "$" is replaced, by the value of the
// variable named by the rest; unset becomes ""; keys are never substituted.
func TestVariableSubstitution(t *testing.T) {
	vars := env(map[string]string{"TOKEN": "tok-123", "HOST": "db.internal", "EMPTY": ""})
	tests := []struct {
		name  string
		doc   string
		check func(t *testing.T, s *config.Server)
	}{
		{"whole string is replaced", `{"command": "c", "env": {"T": "$TOKEN"}}`, func(t *testing.T, s *config.Server) {
			equal(t, "Env", s.Env, config.Pairs{{Key: "T", Value: "tok-123"}})
		}},
		{"embedded reference stays literal", `{"type": "http", "url": "u", "headers": {"Authorization": "Bearer $TOKEN"}}`, func(t *testing.T, s *config.Server) {
			equal(t, "Headers", s.Headers, config.Pairs{{Key: "Authorization", Value: "Bearer $TOKEN"}})
		}},
		{"braces are not syntax", `{"command": "c", "env": {"T": "${TOKEN}"}}`, func(t *testing.T, s *config.Server) {
			equal(t, "Env", s.Env, config.Pairs{{Key: "T", Value: ""}}) // variable named "{TOKEN}" is unset
		}},
		{"unset variable becomes empty, never the literal", `{"command": "c", "env": {"T": "$NOT_SET"}}`, func(t *testing.T, s *config.Server) {
			equal(t, "Env", s.Env, config.Pairs{{Key: "T", Value: ""}})
		}},
		{"variable set to empty", `{"command": "c", "env": {"T": "$EMPTY"}}`, func(t *testing.T, s *config.Server) {
			equal(t, "Env", s.Env, config.Pairs{{Key: "T", Value: ""}})
		}},
		{"lists", `{"command": "c", "args": ["--host", "$HOST", "--token=$TOKEN", "$NOT_SET"]}`, func(t *testing.T, s *config.Server) {
			equal(t, "Args", s.Args, []string{"--host", "db.internal", "--token=$TOKEN", ""})
		}},
		{"scalar fields", `{"command": "$HOST", "cwd": "$HOST", "description": "$TOKEN"}`, func(t *testing.T, s *config.Server) {
			equal(t, "Command", s.Command, "db.internal")
			equal(t, "Cwd", s.Cwd, "db.internal")
			equal(t, "Description", s.Description, "tok-123")
		}},
		{"nested blocks", `{"type": "http", "url": "u", "oauth": {"token_url": "$HOST", "client_secret": "$TOKEN", "extra_token_params": {"k": "$TOKEN"}}, "user_auth": {"users": {"alice": "$TOKEN"}}}`, func(t *testing.T, s *config.Server) {
			equal(t, "TokenURL", s.OAuth.TokenURL, "db.internal")
			equal(t, "ClientSecret", s.OAuth.ClientSecret, "tok-123")
			equal(t, "ExtraTokenParams", s.OAuth.ExtraTokenParams, config.Pairs{{Key: "k", Value: "tok-123"}})
			equal(t, "Users", s.UserAuth.Users, config.Pairs{{Key: "alice", Value: "tok-123"}})
		}},
		{"extras, nested lists and maps; non-strings untouched", `{"command": "c", "x-meta": {"list": ["$TOKEN", 1, true, null, ["$HOST"]], "map": {"k": "$HOST", "n": 2.5}}}`, func(t *testing.T, s *config.Server) {
			equal(t, "Extra", compact(t, s.Extra), `{"x-meta":{"list":["tok-123",1,true,null,["db.internal"]],"map":{"k":"db.internal","n":2.5}}}`)
		}},
		{"keys are not substituted", `{"command": "c", "env": {"$TOKEN": "v"}, "x-$TOKEN": 1}`, func(t *testing.T, s *config.Server) {
			equal(t, "Env", s.Env, config.Pairs{{Key: "$TOKEN", Value: "v"}})
			equal(t, "Extra", compact(t, s.Extra), `{"x-$TOKEN":1}`)
		}},
		{"routing keywords and type", `{"type": "$KIND", "url": "u", "routing": {"mode": "prefer", "keywords": ["$TOKEN"]}}`, func(t *testing.T, s *config.Server) {
			equal(t, "Type", s.Type, "stdio") // $KIND unset → "" → the default
			equal(t, "Keywords", s.Routing.Keywords, []string{"tok-123"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext := mustParse(t, []byte(`{"mcpServers": {"s": `+tt.doc+`}}`), vars)
			tt.check(t, mustServer(t, ext, "s"))
		})
	}
}

// TestRawKeepsPlaceholders: writers work on Raw, so the placeholder (not the
// secret) is what gets written back.
func TestRawKeepsPlaceholders(t *testing.T) {
	doc := `{"mcpServers": {"gh": {"command": "npx", "env": {"GITHUB_TOKEN": "$GITHUB_TOKEN"}, "args": ["$GITHUB_TOKEN"]}}, "extra": "$GITHUB_TOKEN"}`
	ext := mustParse(t, []byte(doc), env(map[string]string{"GITHUB_TOKEN": "ghp_secret"}))
	equal(t, "resolved", mustServer(t, ext, "gh").Env, config.Pairs{{Key: "GITHUB_TOKEN", Value: "ghp_secret"}})
	raw := compact(t, ext.Raw)
	if strings.Contains(raw, "ghp_secret") {
		t.Errorf("Raw holds the resolved secret: %s", raw)
	}
	equal(t, "Raw", raw, `{"mcpServers":{"gh":{"command":"npx","env":{"GITHUB_TOKEN":"$GITHUB_TOKEN"},"args":["$GITHUB_TOKEN"]}},"extra":"$GITHUB_TOKEN"}`)
}

// TestNilLookupUsesProcessEnvironment: a nil lookup means os.LookupEnv.
func TestNilLookupUsesProcessEnvironment(t *testing.T) {
	t.Setenv("ANTLER_CONFIG_TEST_TOKEN", "from-process")
	ext := mustParse(t, []byte(`{"mcpServers": {"s": {"command": "$ANTLER_CONFIG_TEST_TOKEN"}}}`), nil)
	equal(t, "Command", mustServer(t, ext, "s").Command, "from-process")
}

// TestSecretsNeverInMessages: every string in these broken documents is a
// $VAR reference whose value is a secret. No error, problem or warning may
// show it (DeerFlow leaks resolved values in validation errors; Antler
// must not).
func TestSecretsNeverInMessages(t *testing.T) {
	const secret = "s3cr3t-VALUE"
	server := func(body string) string { return `{"mcpServers": {"x": ` + body + `}}` }
	tests := []struct {
		name string
		doc  string
	}{
		{"routing mode", server(`{"command": "$SECRET", "routing": {"mode": "$SECRET"}}`)},
		{"tool override routing mode", server(`{"command": "$SECRET", "tools": {"query": {"routing": {"mode": "$SECRET"}}}}`)},
		{"routing priority and keywords", server(`{"command": "$SECRET", "routing": {"mode": "prefer", "priority": "$SECRET", "keywords": ["$SECRET", 3]}}`)},
		{"clamped priority with secret keywords", server(`{"command": "$SECRET", "routing": {"mode": "prefer", "priority": -5, "keywords": ["$SECRET"]}}`)},
		{"oauth grant type", server(`{"type": "http", "url": "$SECRET", "oauth": {"token_url": "$SECRET", "grant_type": "$SECRET", "client_secret": "$SECRET"}}`)},
		{"oauth numbers", server(`{"type": "http", "url": "$SECRET", "oauth": {"token_url": "$SECRET", "refresh_skew_seconds": "$SECRET"}}`)},
		{"user_auth on_missing", server(`{"type": "http", "url": "$SECRET", "user_auth": {"header": "$SECRET", "on_missing": "$SECRET", "users": {"a": "$SECRET", "b": 1}}}`)},
		{"headers_from_context on_missing", server(`{"type": "http", "url": "$SECRET", "headers_from_context": {"headers": {"X-A": "$SECRET"}, "on_missing": "$SECRET"}}`)},
		{"unsupported type", server(`{"type": "$SECRET", "url": "$SECRET"}`)},
		{"unsupported transport alias", server(`{"transport": "$SECRET", "url": "$SECRET"}`)},
		{"protocol version", server(`{"command": "$SECRET", "protocol_version": "$SECRET"}`)},
		{"task tool reused", server(`{"type": "http", "url": "$SECRET", "task_toolsets": [{"name": "$SECRET", "submit_tool": "$SECRET", "status_tool": "$SECRET", "cancel_tool": "$SECRET"}]}`)},
		{"task tool reused across groups", server(`{"type": "http", "url": "$SECRET", "task_toolsets": [{"name": "$SECRET", "submit_tool": "$SECRET", "status_tool": "a", "cancel_tool": "b"}, {"name": "$SECRET", "submit_tool": "$SECRET", "status_tool": "c", "cancel_tool": "d"}]}`)},
		{"task toolset extra key", server(`{"type": "http", "url": "$SECRET", "task_toolsets": [{"name": "$SECRET", "submit_tool": "$SECRET", "status_tool": "$SECRET", "cancel_tool": "$SECRET", "z": "$SECRET"}]}`)},
		{"headers under two spellings", server(`{"type": "http", "url": "$SECRET", "headers": {"Authorization": "$SECRET", "AUTHORIZATION": "$SECRET"}}`)},
		{"env with a number", server(`{"command": "$SECRET", "env": {"A": "$SECRET", "B": 5}}`)},
		{"wrong types everywhere", server(`{"command": "$SECRET", "enabled": "$SECRET", "tool_name_prefix": "$SECRET", "tool_call_timeout": "$SECRET", "session_init_timeout": "$SECRET", "args": "$SECRET", "env": "$SECRET", "headers": "$SECRET"}`)},
		{"blocks that are strings", server(`{"command": "$SECRET", "oauth": "$SECRET", "user_auth": "$SECRET", "headers_from_context": "$SECRET", "routing": "$SECRET", "tools": "$SECRET", "task_toolsets": "$SECRET"}`)},
		{"stdio with credentials", server(`{"command": "$SECRET", "user_auth": {"users": {"a": "$SECRET"}}, "headers_from_context": {"headers": {"X": "$SECRET"}}}`)},
		{"interceptors", `{"mcpInterceptors": ["$SECRET", 4], "mcpServers": {"x": "$SECRET"}}`},
		{"interceptors not a list", `{"mcpInterceptors": {"a": "$SECRET"}, "middlewares": ["$SECRET", 1], "skills": {"s": {"enabled": "$SECRET"}}}`},
		{"servers a string", `{"mcpServers": "$SECRET"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext, err := config.Parse([]byte(tt.doc), constant(secret))
			var texts []string
			if err != nil {
				texts = append(texts, err.Error())
				var p config.Problems
				if errors.As(err, &p) {
					for _, e := range p {
						texts = append(texts, e.Path, e.Message)
					}
				}
			}
			if ext != nil {
				texts = append(texts, ext.Warnings...)
				for _, s := range ext.Servers {
					if s.Problem != nil {
						texts = append(texts, s.Problem.Error())
					}
				}
			}
			if len(texts) == 0 {
				t.Fatal("the document produced no error, warning or problem; the case tests nothing")
			}
			for _, text := range texts {
				if strings.Contains(text, secret) {
					t.Errorf("message shows the secret: %q", text)
				}
			}
		})
	}
}

// TestSecretFreeMessagesStillNameTheVariable: with the value hidden, the
// message points at the reference instead.
func TestSecretFreeMessagesStillNameTheVariable(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"routing mode", `{"mcpServers": {"x": {"command": "c", "routing": {"mode": "$MODE"}}}}`,
			`mcpServers.x.routing.mode: must be one of "off", "prefer", got the value of $MODE`},
		{"task tool", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "$GROUP", "submit_tool": "$TOOL", "status_tool": "$TOOL", "cancel_tool": "c"}]}}}`,
			"mcpServers.x.task_toolsets[0].status_tool: MCP task tool '$TOOL' must be unique across task_toolsets and roles; it is configured as both $GROUP.submit and $GROUP.status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.doc), constant("hidden"))
			equal(t, "error", err.Error(), tt.want)
		})
	}
}

// The right-hand side of headers_from_context.headers names a key of the
// call's secrets; it is never an environment variable.
func TestContextHeaderMappingValuesAreNotEnvResolved(t *testing.T) {
	ext, err := config.Parse([]byte(`{"mcpServers": {"s": {"type": "http", "url": "u",
		"headers_from_context": {"headers": {"X-Key": "$API_TOKEN"}}}}}`), func(string) (string, bool) { return "sk-live-secret", true })
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ext.Servers[0].HeadersFromContext.Headers.Get("X-Key"); got != "$API_TOKEN" {
		t.Errorf("mapping value = %q, want the key name as written", got)
	}
}
