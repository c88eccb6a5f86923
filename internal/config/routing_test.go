package config_test

import (
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

// TestEffectiveRouting follows DeerFlow's test_mcp_routing_config: the server
// routing applies to every tool, and a tool override replaces only the
// fields it sets. Tools are named by their original (un-prefixed) name.
func TestEffectiveRouting(t *testing.T) {
	const doc = `{"mcpServers": {"pg": {"command": "c",
	  "routing": {"mode": "prefer", "priority": 50, "keywords": ["sql", "database"]},
	  "tools": {
	    "query":      {"routing": {"priority": 100}},
	    "schema":     {"routing": {"keywords": ["schema", "tables"]}},
	    "drop":       {"routing": {"mode": "off"}},
	    "all":        {"routing": {"mode": "prefer", "priority": 1, "keywords": []}},
	    "no-routing": {"note": "no routing block"},
	    "null":       {"routing": null},
	    "empty":      {"routing": {}}
	  }},
	  "quiet": {"command": "c",
	    "tools": {
	      "search": {"routing": {"mode": "prefer", "keywords": ["find"]}},
	      "ranked": {"routing": {"priority": 70, "keywords": ["rank"]}}
	  }}}}`
	ext := mustParse(t, []byte(doc), noEnv)
	pg, quiet := mustServer(t, ext, "pg"), mustServer(t, ext, "quiet")
	server := config.Routing{Mode: "prefer", Priority: 50, Keywords: []string{"sql", "database"}}
	tests := []struct {
		name string
		s    *config.Server
		tool string
		want config.Routing
	}{
		{"tool without an override inherits the server", pg, "list", server},
		{"override without routing inherits", pg, "no-routing", server},
		{"null routing inherits", pg, "null", server},
		{"empty routing inherits", pg, "empty", server},
		{"priority only", pg, "query", config.Routing{Mode: "prefer", Priority: 100, Keywords: []string{"sql", "database"}}},
		{"keywords only", pg, "schema", config.Routing{Mode: "prefer", Priority: 50, Keywords: []string{"schema", "tables"}}},
		{"mode off only", pg, "drop", config.Routing{Mode: "off", Priority: 50, Keywords: []string{"sql", "database"}}},
		{"every field", pg, "all", config.Routing{Mode: "prefer", Priority: 1, Keywords: []string{}}},
		{"prefixed name is not the original", pg, "pg_query", server},
		{"server off by default", quiet, "other", config.Routing{Mode: "off"}},
		{"override turns prefer on", quiet, "search", config.Routing{Mode: "prefer", Keywords: []string{"find"}}},
		{"server off is inherited unless the override sets prefer", quiet, "ranked", config.Routing{Mode: "off", Priority: 70, Keywords: []string{"rank"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.s.EffectiveRouting(tt.tool)
			equal(t, "Mode", got.Mode, tt.want.Mode)
			equal(t, "Priority", got.Priority, tt.want.Priority)
			equal(t, "Keywords", append([]string{}, got.Keywords...), append([]string{}, tt.want.Keywords...))
		})
	}

	t.Run("result is a copy", func(t *testing.T) {
		r := pg.EffectiveRouting("list")
		r.Keywords[0] = "changed"
		r2 := pg.EffectiveRouting("schema")
		r2.Keywords[0] = "changed"
		equal(t, "server keywords", pg.Routing.Keywords, []string{"sql", "database"})
		equal(t, "override keywords", pg.EffectiveRouting("schema").Keywords, []string{"schema", "tables"})
	})
}

// TestRoutingPriorityClamp: out-of-range priorities are clamped to 0..100
// with DeerFlow's warning text, at server level and in tool overrides.
func TestRoutingPriorityClamp(t *testing.T) {
	tests := []struct {
		name     string
		routing  string // server routing
		tool     string // tools.t.routing, "" for none
		server   int
		override int
		warnings []string
	}{
		{"below zero", `{"priority": -5}`, "", 0, 0, []string{"mcpServers.s.routing.priority: MCP routing priority -5 is below 0; clamping to 0."}},
		{"above 100", `{"priority": 150}`, "", 100, 100, []string{"mcpServers.s.routing.priority: MCP routing priority 150 is above 100; clamping to 100."}},
		{"bounds are kept", `{"priority": 0}`, `{"priority": 100}`, 0, 100, nil},
		{"override below zero", `{"priority": 40}`, `{"priority": -1}`, 40, 0, []string{"mcpServers.s.tools.t.routing.priority: MCP routing priority -1 is below 0; clamping to 0."}},
		{"override above 100", `{"priority": 40}`, `{"priority": 1000}`, 40, 100, []string{"mcpServers.s.tools.t.routing.priority: MCP routing priority 1000 is above 100; clamping to 100."}},
		{"both", `{"priority": -7}`, `{"priority": 101}`, 0, 100, []string{
			"mcpServers.s.routing.priority: MCP routing priority -7 is below 0; clamping to 0.",
			"mcpServers.s.tools.t.routing.priority: MCP routing priority 101 is above 100; clamping to 100.",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"mcpServers": {"s": {"command": "c", "routing": ` + tt.routing
			if tt.tool != "" {
				doc += `, "tools": {"t": {"routing": ` + tt.tool + `}}`
			}
			doc += `}}}`
			ext := mustParse(t, []byte(doc), noEnv)
			s := mustServer(t, ext, "s")
			equal(t, "server priority", s.Routing.Priority, tt.server)
			equal(t, "tool priority", s.EffectiveRouting("t").Priority, tt.override)
			equal(t, "warnings", ext.Warnings, tt.warnings)
		})
	}
}

// TestRoutingValidation: mode must be off or prefer and unknown routing
// fields are rejected, at server level and in overrides.
func TestRoutingValidation(t *testing.T) {
	tests := []struct {
		name    string
		server  string
		path    string
		message string
	}{
		{"invalid mode", `"routing": {"mode": "auto"}`, "mcpServers.s.routing.mode", `must be one of "off", "prefer", got "auto"`},
		{"mode not a string", `"routing": {"mode": true}`, "mcpServers.s.routing.mode", "must be a string, got a boolean"},
		{"unknown field", `"routing": {"mode": "prefer", "weight": 3}`, "mcpServers.s.routing.weight", "unknown field (allowed: keywords, mode, priority)"},
		{"override unknown field", `"tools": {"t": {"routing": {"prio": 3}}}`, "mcpServers.s.tools.t.routing.prio", "unknown field (allowed: keywords, mode, priority)"},
		{"override invalid mode", `"tools": {"t": {"routing": {"mode": "on"}}}`, "mcpServers.s.tools.t.routing.mode", `got "on"`},
		{"routing not an object", `"routing": ["prefer"]`, "mcpServers.s.routing", "must be an object, got a list"},
		{"keywords not strings", `"routing": {"keywords": ["a", 1]}`, "mcpServers.s.routing.keywords[1]", "must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(`{"mcpServers": {"s": {"command": "c", `+tt.server+`}}}`), noEnv)
			p := problemsOf(t, err)
			equal(t, "paths", problemPaths(p), []string{tt.path})
			if !strings.Contains(p[0].Message, tt.message) {
				t.Errorf("message %q does not contain %q", p[0].Message, tt.message)
			}
		})
	}
}
