package config_test

import (
	"fmt"

	"github.com/antler-mcp/antler/internal/config"
)

// ExampleParse reads an extensions_config.json document, resolving $VAR
// references with a custom lookup (nil would use the process environment).
func ExampleParse() {
	doc := []byte(`{
	  "mcpServers": {
	    "github": {
	      "command": "npx",
	      "args": ["-y", "@modelcontextprotocol/server-github"],
	      "env": {"GITHUB_TOKEN": "$GITHUB_TOKEN"},
	      "routing": {"mode": "prefer", "priority": 150, "keywords": ["pull request", "issue"]}
	    },
	    "docs": {"transport": "http", "url": "https://docs.example.com/mcp", "enabled": false},
	    "broken": {"type": "websocket"}
	  }
	}`)
	lookup := func(name string) (string, bool) {
		if name == "GITHUB_TOKEN" {
			return "ghp_example", true
		}
		return "", false
	}

	ext, err := config.Parse(doc, lookup)
	if err != nil {
		fmt.Println("invalid:", err)
		return
	}
	for _, s := range ext.Servers {
		fmt.Printf("%s: type=%s enabled=%v init-timeout=%v\n", s.Name, s.Type, s.Enabled, s.SessionInitTimeout)
		if s.Problem != nil {
			fmt.Println("  skipped:", s.Problem)
		}
	}
	gh, _ := ext.Server("github")
	fmt.Println("token set:", gh.Env.Map()["GITHUB_TOKEN"] != "")
	fmt.Println("exposed as:", gh.ExposedName("create_issue"))
	fmt.Printf("routing: %+v\n", gh.EffectiveRouting("create_issue"))
	for _, w := range ext.Warnings {
		fmt.Println("warning:", w)
	}

	_, err = config.Parse([]byte(`{"mcpServers": {"x": {"command": "c", "args": [1], "routing": {"mode": "always"}}}}`), lookup)
	fmt.Println(err)

	// Output:
	// github: type=stdio enabled=true init-timeout=1m0s
	// docs: type=http enabled=false init-timeout=1m0s
	// broken: type=websocket enabled=true init-timeout=1m0s
	//   skipped: mcpServers.broken.type: MCP server 'broken' has unsupported transport type: "websocket"
	// token set: true
	// exposed as: github_create_issue
	// routing: {Mode:prefer Priority:100 Keywords:[pull request issue]}
	// warning: mcpServers.github.routing.priority: MCP routing priority 150 is above 100; clamping to 100.
	// 2 problems:
	//   mcpServers.x.args[0]: must be a string, got a number
	//   mcpServers.x.routing.mode: must be one of "off", "prefer", got "always"
}
