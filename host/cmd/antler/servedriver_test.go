package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesABadServerDriver: a server's plugin task driver
// (mcpServers.<name>.driver) that is not a task driver plugin, or whose
// file is missing, stops the host at startup with the field named; one
// configured while mcp_tasks is off stops it too.
func TestServeRefusesABadServerDriver(t *testing.T) {
	dir := t.TempDir()
	on := writeFile(t, "on.yaml", "mcp_tasks:\n  enabled: true\n")
	off := writeFile(t, "off.yaml", "mcp_tasks:\n  enabled: false\n")
	for _, tt := range []struct {
		name, driver, settings, want string
	}{
		{"extism", `"extism:./d.wasm"`, on, "mcpServers.t26.driver.kind"},
		{"missing file", `"wasm:./missing.wasm"`, on, "mcpServers.t26.driver"},
		{"runtime off", `"wasm:./missing.wasm"`, off, "mcp_tasks.enabled=true is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeFile(t, "c.json", `{"mcpServers": {"t26": {"command": "tasks2026", "driver": `+tt.driver+`}}}`)
			var out, errb bytes.Buffer
			code := run([]string{"serve", "--config", cfg, "--settings", tt.settings, "--listen", "127.0.0.1:0",
				"--data", filepath.Join(dir, tt.name)}, &out, &errb)
			if code != 1 || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("serve: exit %d, %s; want exit 1 naming %s", code, &errb, tt.want)
			}
		})
	}
}
