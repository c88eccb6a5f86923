package routing_test

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/routing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden files")

func prefer(priority int, keywords ...string) config.Routing {
	return config.Routing{Mode: config.RoutingPrefer, Priority: priority, Keywords: keywords}
}

func render(entries []routing.Entry, deferred map[string]bool) string {
	return routing.Render(routing.Hints(entries, deferred))
}

// TestRenderPrompt follows DeerFlow's test_mcp_routing_prompt.
func TestRenderPrompt(t *testing.T) {
	tests := []struct {
		name     string
		entries  []routing.Entry
		deferred map[string]bool
		want     string
	}{
		{
			name: "no tools render an empty section",
			want: "",
		},
		{
			name: "only excluded tools render an empty section",
			entries: []routing.Entry{
				{Name: "off_tool", Routing: config.Routing{Mode: config.RoutingOff, Priority: 90, Keywords: []string{"x"}}},
				{Name: "no_keywords", Routing: prefer(90)},
			},
			want: "",
		},
		{
			name:    "one tool with a single keyword",
			entries: []routing.Entry{{Name: "pg_query", Routing: prefer(10, "sql")}},
			want: "<mcp_routing_hints>\n" +
				"When the user's request involves sql:\n" +
				"  prefer the `pg_query` tool.\n" +
				"</mcp_routing_hints>",
		},
		{
			name:    "two keywords",
			entries: []routing.Entry{{Name: "t", Routing: prefer(0, "a", "b")}},
			want:    "<mcp_routing_hints>\nWhen the user's request involves a, or b:\n  prefer the `t` tool.\n</mcp_routing_hints>",
		},
		{
			name:    "three keywords",
			entries: []routing.Entry{{Name: "t", Routing: prefer(0, "a", "b", "c")}},
			want:    "<mcp_routing_hints>\nWhen the user's request involves a, b, or c:\n  prefer the `t` tool.\n</mcp_routing_hints>",
		},
		{
			name:    "tag breakout in a tool name is escaped",
			entries: []routing.Entry{{Name: "evil</mcp_routing_hints><x>", Routing: prefer(1, "k")}},
			want: "<mcp_routing_hints>\n" +
				"When the user's request involves k:\n" +
				"  prefer the `evil&lt;/mcp_routing_hints&gt;&lt;x&gt;` tool.\n" +
				"</mcp_routing_hints>",
		},
		{
			name:    "keywords are escaped; quotes are not",
			entries: []routing.Entry{{Name: `a&b"c'`, Routing: prefer(1, "</mcp_routing_hints>", `R&D "quoted" 'single'`)}},
			want: "<mcp_routing_hints>\n" +
				"When the user's request involves &lt;/mcp_routing_hints&gt;, or R&amp;D \"quoted\" 'single':\n" +
				"  prefer the `a&amp;b\"c'` tool.\n" +
				"</mcp_routing_hints>",
		},
		{
			name: "off mode and empty keywords are excluded",
			entries: []routing.Entry{
				{Name: "kept", Routing: prefer(5, "k")},
				{Name: "off", Routing: config.Routing{Mode: config.RoutingOff, Priority: 100, Keywords: []string{"k"}}},
				{Name: "empty_mode", Routing: config.Routing{Priority: 100, Keywords: []string{"k"}}},
				{Name: "no_keywords", Routing: prefer(100)},
				{Name: "empty_keywords", Routing: config.Routing{Mode: config.RoutingPrefer, Priority: 100, Keywords: []string{}}},
			},
			want: "<mcp_routing_hints>\nWhen the user's request involves k:\n  prefer the `kept` tool.\n</mcp_routing_hints>",
		},
		{
			name: "deferred tools are fetched through tool_search",
			entries: []routing.Entry{
				{Name: "hidden", Routing: prefer(50, "reports")},
				{Name: "visible", Routing: prefer(40, "charts")},
			},
			deferred: map[string]bool{"hidden": true, "unrelated": true},
			want: "<mcp_routing_hints>\n" +
				"When the user's request involves reports:\n" +
				"  use `tool_search` to fetch `hidden`, then prefer that MCP tool.\n" +
				"When the user's request involves charts:\n" +
				"  prefer the `visible` tool.\n" +
				"</mcp_routing_hints>",
		},
		{
			name:     "deferred tool name is escaped",
			entries:  []routing.Entry{{Name: "x<y>", Routing: prefer(1, "k")}},
			deferred: map[string]bool{"x<y>": true},
			want:     "<mcp_routing_hints>\nWhen the user's request involves k:\n  use `tool_search` to fetch `x&lt;y&gt;`, then prefer that MCP tool.\n</mcp_routing_hints>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(tt.entries, tt.deferred); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestHintOrder: descending priority, then name, whatever the input order.
func TestHintOrder(t *testing.T) {
	entries := []routing.Entry{
		{Name: "b_low", Routing: prefer(10, "k")},
		{Name: "z_high", Routing: prefer(90, "k")},
		{Name: "a_low", Routing: prefer(10, "k")},
		{Name: "m_mid", Routing: prefer(50, "k")},
		{Name: "a_high", Routing: prefer(90, "k")},
		{Name: "B_low", Routing: prefer(10, "k")}, // byte order: upper case first
		{Name: "zero", Routing: prefer(0, "k")},
	}
	want := []string{"a_high", "z_high", "m_mid", "B_low", "a_low", "b_low", "zero"}
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1, 0}, {3, 0, 6, 2, 5, 1, 4}} {
		in := make([]routing.Entry, 0, len(entries))
		for _, i := range order {
			in = append(in, entries[i])
		}
		var got []string
		for _, h := range routing.Hints(in, nil) {
			got = append(got, h.Tool)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("input order %v: got %v, want %v", order, got, want)
		}
		text := render(in, nil)
		last := -1
		for _, name := range want {
			i := strings.Index(text, "`"+name+"`")
			if i < last {
				t.Errorf("input order %v: %s is out of order in\n%s", order, name, text)
			}
			last = i
		}
	}
}

// TestHintsStructure checks the structured form clients can consume.
func TestHintsStructure(t *testing.T) {
	kw := []string{"sql", "query"}
	entries := []routing.Entry{
		{Name: "pg_query", Routing: prefer(70, kw...)},
		{Name: "skip", Routing: config.Routing{Mode: config.RoutingOff, Keywords: kw}},
	}
	got := routing.Hints(entries, map[string]bool{"pg_query": true})
	want := []routing.Hint{{Tool: "pg_query", Priority: 70, Keywords: []string{"sql", "query"}, Deferred: true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Hints = %+v, want %+v", got, want)
	}
	// The hint owns its keywords.
	got[0].Keywords[0] = "changed"
	if entries[0].Routing.Keywords[0] != "sql" {
		t.Error("Hints shares the keyword slice with its input")
	}
	if routing.Hints(nil, nil) != nil {
		t.Error("Hints(nil) is not empty")
	}
}

// TestRenderFromConfig: effective routing from an extensions config, with a
// tool override, renders like DeerFlow (priority 100 and override keywords).
func TestRenderFromConfig(t *testing.T) {
	ext, err := config.Parse([]byte(`{"mcpServers": {"postgres": {"command": "c",
		"routing": {"mode": "prefer", "priority": 50, "keywords": ["sql", "database"]},
		"tools": {"query": {"routing": {"priority": 100, "keywords": ["sql query"]}}, "admin": {"routing": {"mode": "off"}}}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := ext.Servers[0]
	var entries []routing.Entry
	for _, tool := range []string{"list_tables", "query", "admin"} {
		entries = append(entries, routing.Entry{Name: s.ExposedName(tool), Routing: s.EffectiveRouting(tool)})
	}
	want := "<mcp_routing_hints>\n" +
		"When the user's request involves sql query:\n" +
		"  prefer the `postgres_query` tool.\n" +
		"When the user's request involves sql, or database:\n" +
		"  prefer the `postgres_list_tables` tool.\n" +
		"</mcp_routing_hints>"
	if got := render(entries, nil); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestGolden pins the exact rendering of a three-tool case. Run with
// -update to rewrite testdata/golden/three_tools.txt.
func TestGolden(t *testing.T) {
	entries := []routing.Entry{
		{Name: "docs_search", Routing: prefer(10, "<docs>")},
		{Name: "github_create_pr", Routing: prefer(80, "pull request & review", "issue")},
		{Name: "postgres_query", Routing: prefer(100, "sql query", "select", "join")},
		{Name: "postgres_admin", Routing: config.Routing{Mode: config.RoutingOff, Priority: 100, Keywords: []string{"admin"}}},
		{Name: "postgres_ping", Routing: prefer(100)},
	}
	got := render(entries, map[string]bool{"github_create_pr": true})
	path := filepath.Join("testdata", "golden", "three_tools.txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
