package config_test

import (
	"strings"
	"testing"
)

func TestTaskFreezeDrift(t *testing.T) {
	const base = `{"mcpServers": {
		"reports": {"command": "reports", "args": ["-v"], "description": "Reports", "tool_name_prefix": true,
			"routing": {"keywords": ["report"]}, "tools": {"submit_report": {"routing": {"keywords": ["q3"]}}},
			"task_toolsets": [{"name": "report-generation", "submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]},
		"demo": {"command": "demo"}
	}, "mcpInterceptors": ["wasm:policy.wasm"]}`
	frozen := mustParse(t, []byte(base), nil).TaskFreeze()
	tests := []struct {
		name string
		edit func(string) string
		want string
	}{
		{"unchanged", func(s string) string { return s }, ""},
		{"description", swap(`"description": "Reports"`, `"description": "Quarterly reports"`), ""},
		{"tool_name_prefix", swap(`"tool_name_prefix": true`, `"tool_name_prefix": false`), ""},
		{"routing", swap(`"keywords": ["report"]`, `"keywords": ["report", "revenue"]`), ""},
		{"tool overrides", swap(`"keywords": ["q3"]`, `"keywords": ["q4"]`), ""},
		{"a non-task server", swap(`"command": "demo"`, `"command": "demo2"`), ""},
		{"args", swap(`"args": ["-v"]`, `"args": ["-v", "-x"]`), "reports"},
		{"env", swap(`"args": ["-v"],`, `"args": ["-v"], "env": {"MODE": "fast"},`), "reports"},
		{"a toolset", swap(`"cancel_tool": "cancel_report"`, `"cancel_tool": "abort_report"`), "reports"},
		{"timeout", swap(`"args": ["-v"],`, `"args": ["-v"], "tool_call_timeout": 5,`), "reports"},
		{"disabled", swap(`"command": "reports",`, `"command": "reports", "enabled": false,`), "reports"},
		{"a new task server", swap(`"demo": {"command": "demo"}`, `"demo": {"command": "demo", "task_toolsets": [{"name": "d", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c"}]}`), "demo"},
		{"interceptors", swap(`"wasm:policy.wasm"`, `"wasm:other.wasm"`), "mcpInterceptors"},
		{"server and interceptors", func(s string) string {
			return swap(`"wasm:policy.wasm"`, `"wasm:other.wasm"`)(swap(`"args": ["-v"]`, `"args": []`)(s))
		}, "reports, mcpInterceptors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(frozen.Drift(mustParse(t, []byte(tt.edit(base)), nil).TaskFreeze()), ", ")
			if got != tt.want {
				t.Errorf("Drift = %q, want %q", got, tt.want)
			}
		})
	}

	// Without task servers, interceptors stay hot-reloadable.
	plain := mustParse(t, []byte(`{"mcpServers": {"demo": {"command": "demo"}}, "mcpInterceptors": ["wasm:a.wasm"]}`), nil).TaskFreeze()
	if d := plain.Drift(mustParse(t, []byte(`{"mcpServers": {"demo": {"command": "demo"}}, "mcpInterceptors": ["wasm:b.wasm"]}`), nil).TaskFreeze()); len(d) != 0 {
		t.Errorf("interceptor change without task servers: %v", d)
	}
}

func swap(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("fixture lacks " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
}
