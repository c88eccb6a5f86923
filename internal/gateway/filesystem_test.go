package gateway_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// The official filesystem server, pooled per thread in its workspace: what it
// writes lands in the thread's workspace, and the path it answers with reads
// /mnt/user-data/workspace/... for the agent.
func TestFilesystemServerWritesIntoTheThreadWorkspace(t *testing.T) {
	index := testnpm.Filesystem(t)
	data := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "extensions_config.json")
	// "." is the server's allowed directory: its working directory, which is
	// the calling thread's workspace.
	doc := fmt.Sprintf(`{"mcpServers": {"fs": {"command": "node", "args": [%q, "."]}}}`, index)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: data})
	t.Cleanup(cache.Close)
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler())
	t.Cleanup(srv.Close)
	a := &api{t: t, url: srv.URL}

	code, res := a.do("POST", "/api/mcp/tools/fs_write_file/call", `{"arguments": {"path": "notes.txt", "content": "hello"}, "thread_id": "t1"}`)
	if code != 200 || res["isError"] == true {
		t.Fatalf("write_file: %d %v", code, res)
	}
	if got := text(res); !strings.Contains(got, "/mnt/user-data/workspace/notes.txt") {
		t.Errorf("result text %q, want the virtual path", got)
	}
	if strings.Contains(text(res), data) {
		t.Errorf("a host path reached the agent: %q", text(res))
	}
	host := filepath.Join(data, "users", "default", "threads", "t1", "user-data", "workspace", "notes.txt")
	if b, err := os.ReadFile(host); err != nil || string(b) != "hello" {
		t.Errorf("file in the workspace: %q, %v", b, err)
	}
	// Another thread has its own workspace: the file is not there.
	code, res = a.do("POST", "/api/mcp/tools/fs_read_text_file/call", `{"arguments": {"path": "notes.txt"}, "thread_id": "t2"}`)
	if code != 200 || res["isError"] != true {
		t.Errorf("thread t2 read thread t1's file: %d %v", code, res)
	}
}
