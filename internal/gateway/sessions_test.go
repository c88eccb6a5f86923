package gateway_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/antler-mcp/antler/internal/configadmin"
	"github.com/antler-mcp/antler/internal/configfile"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/launchpolicy"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"

	"net/http/httptest"
)

// TestConfigEditRetiresOnlyTheEditedServersSessions edits server b through
// the config API while alice and bob have sessions of a and b: the a
// processes keep running (same PIDs), the b ones are replaced.
func TestConfigEditRetiresOnlyTheEditedServersSessions(t *testing.T) {
	// The launch policy wants a bare command name: the demo server is put
	// on PATH (so the test cannot run in parallel).
	bin := filepath.Base(testmcp.Build(t))
	t.Setenv("PATH", filepath.Dir(testmcp.Build(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	doc := fmt.Sprintf(`{"mcpServers": {"a": {"command": %q}, "b": {"command": %q}}}`, bin, bin)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil),
		Admin: configadmin.New(configadmin.Options{Tools: cache, File: configfile.New(path, nil), LaunchPolicy: launchpolicy.New(bin)})}).Handler())
	t.Cleanup(srv.Close)
	a := &api{t: t, url: srv.URL}
	pid := func(server, thread string) float64 {
		t.Helper()
		code, res := a.do("POST", "/api/mcp/tools/"+server+"_whoami/call", `{"arguments": {}, "thread_id": "`+thread+`"}`)
		sc, _ := res["structuredContent"].(map[string]any)
		if code != 200 || sc["pid"] == nil {
			t.Fatalf("%s_whoami: %d %v", server, code, res)
		}
		return sc["pid"].(float64)
	}
	before := map[string]float64{}
	for _, k := range []string{"a/t1", "a/t2", "b/t1"} {
		before[k] = pid(k[:1], k[2:])
	}
	code, res := a.do("PUT", "/api/mcp/config/server", fmt.Sprintf(`{"server_name": "b", "server": {"command": %q, "args": ["-tools", "extra"]}}`, bin))
	if code != 200 {
		t.Fatalf("edit b: %d %v", code, res)
	}
	for _, k := range []string{"a/t1", "a/t2"} {
		if got := pid(k[:1], k[2:]); got != before[k] {
			t.Errorf("%s: pid %v after editing b, was %v: an unchanged server's session was retired", k, got, before[k])
		}
	}
	if got := pid("b", "t1"); got == before["b/t1"] {
		t.Error("b/t1 kept its process although b's launch changed")
	}
	// The explicit reset still retires everything.
	if code, res := a.do("POST", "/api/mcp/cache/reset", ""); code != 200 {
		t.Fatalf("reset: %d %v", code, res)
	}
	if got := pid("a", "t1"); got == before["a/t1"] {
		t.Error("POST /api/mcp/cache/reset kept a session")
	}
}
