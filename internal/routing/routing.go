// Package routing renders DeerFlow's <mcp_routing_hints> prompt section: soft
// guidance telling a model which MCP tool to prefer for which keywords.
package routing

import (
	"sort"
	"strings"

	"github.com/antler-mcp/antler/internal/config"
)

// Entry is one tool with its effective routing.
type Entry struct {
	Name    string
	Routing config.Routing
}

// Hint is one rendered line pair, for clients that want structure.
type Hint struct {
	Tool     string   `json:"tool"`
	Priority int      `json:"priority"`
	Keywords []string `json:"keywords"`
	Deferred bool     `json:"deferred"`
}

// Hints selects the tools in "prefer" mode with keywords, ordered by
// descending priority and then name. deferred names tools whose schema a
// client has hidden behind tool_search.
func Hints(entries []Entry, deferred map[string]bool) []Hint {
	var out []Hint
	for _, e := range entries {
		if e.Routing.Mode != config.RoutingPrefer || len(e.Routing.Keywords) == 0 {
			continue
		}
		out = append(out, Hint{
			Tool:     e.Name,
			Priority: e.Routing.Priority,
			Keywords: append([]string(nil), e.Routing.Keywords...),
			Deferred: deferred[e.Name],
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority > out[j].Priority
		}
		return out[i].Tool < out[j].Tool
	})
	return out
}

// Render returns the prompt section for hints, or "" when there are none.
// Tool names and keywords come from upstream servers and operators, so both
// are HTML-escaped: a name cannot close the section and forge prompt structure.
func Render(hints []Hint) string {
	if len(hints) == 0 {
		return ""
	}
	lines := []string{"<mcp_routing_hints>"}
	for _, h := range hints {
		kw := make([]string, len(h.Keywords))
		for i, k := range h.Keywords {
			kw[i] = escape(k)
		}
		name := escape(h.Tool)
		lines = append(lines, "When the user's request involves "+keywordList(kw)+":")
		if h.Deferred {
			lines = append(lines, "  use `tool_search` to fetch `"+name+"`, then prefer that MCP tool.")
		} else {
			lines = append(lines, "  prefer the `"+name+"` tool.")
		}
	}
	lines = append(lines, "</mcp_routing_hints>")
	return strings.Join(lines, "\n")
}

// escape is Python's html.escape(s, quote=False): only &, < and >.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func keywordList(kw []string) string {
	if len(kw) == 1 {
		return kw[0]
	}
	return strings.Join(kw[:len(kw)-1], ", ") + ", or " + kw[len(kw)-1]
}
