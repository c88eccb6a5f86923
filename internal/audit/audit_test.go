package audit_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/audit"
)

// TestRecords writes one record of each kind and reads them back as JSON
// lines with their fields.
func TestRecords(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := audit.New(&buf)
	l.ConfigChange("alice", "PUT /api/mcp/config", "/etc/antler/extensions_config.json",
		[]audit.ServerChange{{Server: "fs", Change: audit.ChangeUpdated, Fields: []string{"env.API_KEY", "enabled"}}})
	l.StdioLaunch("fs", "npx", 3, "alice", "t1", "/data/users/alice/threads/t1/user-data/workspace")
	l.PluginLoad("mcpInterceptors[0]", "interceptor", "wasm", "/plugins/redactor.wasm", "ab12")
	l.TaskChange(audit.Task{ID: "mcp-task-1", User: "alice", Thread: "t1", Server: "reports", Driver: "ordinary-tools", Change: "status", From: "working", To: "completed"})
	l.CallDenied("fs", "write_file", "bob", "t2", "plugin", "Denied by policy.")

	var got []map[string]any
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if r["time"] == nil {
			t.Errorf("record without time: %v", r)
		}
		got = append(got, r)
	}
	want := []map[string]any{
		{"event": "config.change", "actor": "alice", "action": "PUT /api/mcp/config"},
		{"event": "stdio.launch", "server": "fs", "command": "npx", "args": 3.0, "user": "alice", "thread": "t1"},
		{"event": "plugin.load", "entry": "mcpInterceptors[0]", "role": "interceptor", "kind": "wasm", "sha256": "ab12"},
		{"event": "task", "change": "status", "task_id": "mcp-task-1", "from": "working", "to": "completed", "driver": "ordinary-tools"},
		{"event": "call.denied", "server": "fs", "tool": "write_file", "user": "bob", "by": "plugin", "message": "Denied by policy."},
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("record %d: %s = %v, want %v", i, k, got[i][k], v)
			}
		}
	}
	ch := got[0]["changes"].([]any)[0].(map[string]any)
	if ch["server"] != "fs" || ch["change"] != "updated" || len(ch["fields"].([]any)) != 2 {
		t.Errorf("config change: %v", ch)
	}
}

// TestOpenAppendsPrivately: the file is created 0600 and appended to across
// opens; concurrent writers never interleave within a line.
func TestOpenAppendsPrivately(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 2 {
		l, err := audit.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() { l.StdioLaunch("fs", "npx", 1, "alice", "t1", "") })
		}
		wg.Wait()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	f, _ := os.Open(path)
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d is not JSON: %q", n, sc.Text())
		}
	}
	if n != 40 {
		t.Errorf("%d lines, want 40 (appended, not truncated)", n)
	}
}

// TestNilLoggerDoesNothing: a package given no audit logger must not panic.
func TestNilLoggerDoesNothing(t *testing.T) {
	t.Parallel()
	l, err := audit.Open("")
	if err != nil || l != nil {
		t.Fatalf("Open(\"\") = %v, %v; want nil, nil", l, err)
	}
	l.ConfigChange("a", "b", "c", nil)
	l.StdioLaunch("s", "c", 0, "u", "t", "")
	l.PluginLoad("e", "r", "k", "p", "h")
	l.TaskChange(audit.Task{})
	l.CallDenied("s", "t", "u", "t", "b", "m")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
