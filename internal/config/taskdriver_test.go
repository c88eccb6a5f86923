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

// TestServerDriver checks a server's own driver (mcpServers.<name>.driver):
// listed before its toolsets' with its field path and no toolset, written
// back by MarshalJSON, and part of the task freeze.
func TestServerDriver(t *testing.T) {
	doc := func(driver string) []byte {
		return []byte(`{"mcpServers": {"t26": {"command": "tasks2026", "driver": ` + driver + `,
		  "task_toolsets": [{"name": "jobs", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "driver": "wasm:./j.wasm"}]}}}`)
	}
	ext := mustParse(t, doc(`{"kind": "wasm", "path": "./inline.wasm", "timeout_ms": 2000}`), noEnv)
	specs := ext.TaskDrivers()
	if len(specs) != 2 || specs[0].Server != "t26" || specs[0].Toolset != "" || specs[0].Field != "mcpServers.t26.driver" ||
		specs[1].Toolset != "jobs" {
		t.Fatalf("TaskDrivers = %+v, want the server's driver, then its toolset's", specs)
	}
	want := `{"kind":"wasm","path":"./inline.wasm","timeout_ms":2000}`
	if got := mustJSON(t, raw(specs[0].JSON)); got != want {
		t.Errorf("driver JSON = %s, want %s", got, want)
	}
	out, err := ext.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if again := mustParse(t, out, noEnv).TaskDrivers(); len(again) != 2 || mustJSON(t, raw(again[0].JSON)) != want {
		t.Errorf("after a round trip: %+v (file %s)", again, out)
	}
	other := mustParse(t, doc(`"process:./inline"`), noEnv)
	if drift := ext.TaskFreeze().Drift(other.TaskFreeze()); !strings.Contains(strings.Join(drift, ","), "t26") {
		t.Errorf("a changed server driver is no drift: %v", drift)
	}
	only := mustParse(t, []byte(`{"mcpServers": {"t26": {"command": "tasks2026", "driver": "wasm:./d.wasm"}}}`), noEnv)
	if names := only.TaskFreeze().Servers(); len(names) != 1 || names[0] != "t26" {
		t.Errorf("a server with only a driver is not task-enabled: %v", names)
	}
}
