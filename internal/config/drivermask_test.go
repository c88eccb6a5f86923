package config_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

// TestDriverConfigIsMasked: a plugin task driver's entry (a task toolset's
// "driver", or the server's own) may hold the driver's keys in its config.
// The config API's view showed them as written, skipped as a declared
// field; they are masked like any secret-named field, in both views.
func TestDriverConfigIsMasked(t *testing.T) {
	for name, server := range map[string]string{
		"task_toolsets[].driver": `{"command": "jobs", "task_toolsets": [{"name": "jobs", "submit_tool": "enqueue",
			"status_tool": "job_state", "cancel_tool": "abort_job",
			"driver": {"kind": "wasm", "path": "./jobsdriver.wasm", "config": {"api_key": "drv-literal-secret-1"}}}]}`,
		"server driver": `{"type": "http", "url": "https://x/mcp",
			"driver": {"kind": "process", "path": "./drv", "config": {"token": "drv-literal-secret-1"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			doc := `{"mcpServers": {"s": ` + server + `}}`
			ext, err := config.Parse([]byte(doc), config.Placeholders)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(ext.MaskedServers())
			if strings.Contains(string(b), "drv-literal-secret-1") {
				t.Errorf("GET /api/mcp/config shows a driver's secret-named config value: %s", b)
			}
			// The raw form a client that edits the raw document gets.
			raw := config.MaskRawServer(jsonObject(t, server))
			rb, _ := json.Marshal(raw)
			if strings.Contains(string(rb), "drv-literal-secret-1") {
				t.Errorf("MaskRawServer shows a driver's secret-named config value: %s", rb)
			}
		})
	}
}
