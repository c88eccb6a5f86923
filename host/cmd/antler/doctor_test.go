package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/taskstore/storetest"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// TestDoctorReady runs antler doctor on a setup that can start: a stdio
// server whose launcher is on PATH, a real Wasm interceptor and a real Wasm
// task driver, the task store on SQLite in a data folder that does not exist
// yet. It passes, and creates nothing.
func TestDoctorReady(t *testing.T) {
	root := testmcp.RepoRoot(t)
	redactor := plugintest.BuildWasm(t, filepath.Join(root, "examples", "plugins", "redactor"))
	driver := plugintest.BuildWasm(t, filepath.Join(root, "examples", "plugins", "jobsdriver"))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "extensions_config.json")
	write(t, cfg, fmt.Sprintf(`{"mcpServers": {"sh": {"command": "sh"},
	  "jobs": {"command": "sh", "task_toolsets": [{"name": "jobs", "submit_tool": "enqueue", "status_tool": "job_state", "cancel_tool": "abort_job", "driver": "wasm:%s"}]}},
	  "mcpInterceptors": ["wasm:%s"]}`, driver, redactor))
	data := filepath.Join(dir, "data")
	set := filepath.Join(dir, "antler.yaml")
	write(t, set, "data_dir: "+data+"\nmcp_tasks:\n  enabled: true\n")

	out, code := doctor(t, "--config", cfg, "--settings", set)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"ok    settings  " + set,
		"ok    config    " + cfg + ": 2 servers, 2 enabled",
		`ok    launcher  server sh: command "sh" is `,
		"ok    data      " + data + " will be created",
		"ok    database  sqlite " + filepath.Join(data, "antler.db") + " will be created",
		"ok    plugin    mcpInterceptors[0] (wasm " + redactor + ") loads",
		"ok    plugin    mcpServers.jobs.task_toolsets[0].driver (wasm " + driver + ") loads",
		"Ready: antler serve should start.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("doctor created the data folder (stat: %v)", err)
	}
}

// TestDoctorFindings breaks one thing at a time and checks doctor names it,
// says what to do, and exits non-zero.
func TestDoctorFindings(t *testing.T) {
	dir := t.TempDir()
	notExec := write(t, filepath.Join(dir, "server.sh"), "#!/bin/sh\n")
	garbage := write(t, filepath.Join(dir, "bad.wasm"), "not a wasm module")
	aFile := write(t, filepath.Join(dir, "a-file"), "")
	closedPort := "postgres://postgres:hunter2@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"
	cases := []struct {
		name     string
		config   string
		settings string
		args     []string
		want     []string
		hidden   string // never in the output
		// emptyPath runs doctor with a PATH that holds nothing.
		emptyPath bool
	}{
		{name: "launcher not on PATH", config: `{"mcpServers": {"fs": {"command": "npx-is-not-installed-here"}}}`,
			want: []string{`FAIL  launcher  server fs: command "npx-is-not-installed-here" is not on PATH`, "set mcpServers.fs.command to an absolute path"}},
		{name: "npx missing says Node.js", config: `{"mcpServers": {"fs": {"command": "npx"}}}`, emptyPath: true,
			want: []string{`FAIL  launcher  server fs: command "npx" is not on PATH`, "install Node.js 20 or newer"}},
		{name: "launcher not executable", config: fmt.Sprintf(`{"mcpServers": {"s": {"command": %q}}}`, notExec),
			want: []string{fmt.Sprintf(`FAIL  launcher  server s: command %q is not an executable file`, notExec), "chmod +x"}},
		{name: "invalid config names the field", config: `{"mcpServers": {"s": {"command": "sh", "routing": {"mode": "always"}}}}`,
			want: []string{"FAIL  config", "mcpServers.s.routing.mode"}},
		{name: "data folder under a file", config: `{"mcpServers": {}}`, settings: "data_dir: " + filepath.Join(aFile, "data") + "\n",
			want: []string{"FAIL  data", aFile + " is not a folder", "set data_dir"}},
		{name: "database unreachable, password hidden", config: `{"mcpServers": {}}`, settings: "mcp_tasks:\n  enabled: true\n",
			args: []string{"--db", closedPort}, want: []string{"FAIL  database  postgres://127.0.0.1:1/test", "start the database"}, hidden: "hunter2"},
		{name: "plugin not a module", config: fmt.Sprintf(`{"mcpServers": {}, "mcpInterceptors": ["wasm:%s"]}`, garbage),
			want: []string{"FAIL  plugin    mcpInterceptors[0]", "rebuild it"}},
		{name: "open listener without keys", config: `{"mcpServers": {}}`, settings: "listen: 0.0.0.0:8080\n",
			want: []string{"FAIL  listen"}},
		{name: "no config", want: []string{"FAIL  config    no extensions config found", "create extensions_config.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			if c.emptyPath {
				t.Setenv("PATH", d)
			}
			t.Chdir(d) // no ./extensions_config.json to fall back on
			args := append([]string{}, c.args...)
			if c.config != "" {
				args = append(args, "--config", write(t, filepath.Join(d, "c.json"), c.config))
			}
			if c.settings != "" {
				args = append(args, "--settings", write(t, filepath.Join(d, "antler.yaml"), c.settings))
			} else {
				args = append(args, "--data", filepath.Join(d, "data"))
			}
			out, code := doctor(t, args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if c.hidden != "" && strings.Contains(out, c.hidden) {
				t.Errorf("output shows %q:\n%s", c.hidden, out)
			}
			if strings.Contains(out, "Ready") {
				t.Errorf("a broken setup is called ready:\n%s", out)
			}
		})
	}
}

// TestDoctorPostgres checks a reachable Postgres store: an empty schema is
// reported as migrated at the next start, and doctor does not migrate it.
func TestDoctorPostgres(t *testing.T) {
	dsn := storetest.PostgresSchema(t, storetest.PostgresURL(t))
	d := t.TempDir()
	cfg := write(t, filepath.Join(d, "c.json"), `{"mcpServers": {}}`)
	set := write(t, filepath.Join(d, "antler.yaml"), "mcp_tasks:\n  enabled: true\n")
	for range 2 { // the second run sees the same: nothing was migrated
		out, code := doctor(t, "--config", cfg, "--settings", set, "--db", dsn, "--data", d)
		if code != 0 || !strings.Contains(out, "ok    database  postgres ") || !strings.Contains(out, ": schema 0, migrated to ") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	}
}

func doctor(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"doctor"}, args...), &out, &errb)
	return out.String() + errb.String(), code
}

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
