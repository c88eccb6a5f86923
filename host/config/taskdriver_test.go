package config_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTaskDrivers checks that a task toolset's driver is kept as written,
// listed with its field path, written back by MarshalJSON and part of the
// task freeze (a changed driver is configuration drift).
func TestTaskDrivers(t *testing.T) {
	doc := func(driver string) []byte {
		return []byte(`{"mcpServers": {
		  "jobs": {"command": "jobs", "task_toolsets": [
		    {"name": "plain", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c"},
		    {"name": "plugged", "submit_tool": "enqueue", "status_tool": "job_state", "cancel_tool": "abort_job", "driver": ` + driver + `}]},
		  "off": {"command": "x", "enabled": false, "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "driver": "wasm:./off.wasm"}]}}}`)
	}
	tests := []struct{ name, driver string }{
		{"string", `"wasm:./jobsdriver.wasm"`},
		{"object", `{"kind": "process", "path": "./jobsdriver", "timeout_ms": 5000}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext := mustParse(t, doc(tt.driver), noEnv)
			specs := ext.TaskDrivers()
			if len(specs) != 1 {
				t.Fatalf("TaskDrivers = %+v, want the enabled server's one driver", specs)
			}
			s := specs[0]
			if s.Server != "jobs" || s.Toolset != "plugged" || s.Field != "mcpServers.jobs.task_toolsets[1].driver" {
				t.Errorf("spec = %+v", s)
			}
			var want, got any
			_ = json.Unmarshal([]byte(tt.driver), &want)
			_ = json.Unmarshal(s.JSON, &got)
			if b1, _ := json.Marshal(want); string(b1) != mustJSON(t, got) {
				t.Errorf("driver JSON = %s, want %s", s.JSON, tt.driver)
			}
			out, err := ext.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			again := mustParse(t, out, noEnv)
			if specs := again.TaskDrivers(); len(specs) != 1 || mustJSON(t, raw(specs[0].JSON)) != mustJSON(t, got) {
				t.Errorf("after a round trip: %+v (file %s)", specs, out)
			}
			other := mustParse(t, doc(`"wasm:./other.wasm"`), noEnv)
			if drift := ext.TaskFreeze().Drift(other.TaskFreeze()); tt.driver != `"wasm:./other.wasm"` && !strings.Contains(strings.Join(drift, ","), "jobs") {
				t.Errorf("a changed driver is no drift: %v", drift)
			}
		})
	}
}

func raw(b []byte) any {
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
