package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/toolcache"
)

func TestTryItPrintsTheMCPEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		open bool
		want []string
		not  []string
	}{
		{"without keys", true, []string{"MCP endpoint: http://127.0.0.1:8001/mcp", "http://127.0.0.1:8001/sse"}, []string{"Authorization: Bearer"}},
		{"with keys", false, []string{"MCP endpoint: http://127.0.0.1:8001/mcp", "Authorization: Bearer $ANTLER_KEY"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printTryIt(&out, "127.0.0.1:8001", &toolcache.ToolSet{}, tc.open)
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, &out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q:\n%s", w, &out)
				}
			}
		})
	}
}
