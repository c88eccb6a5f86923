package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// TestHostToolNameCollision: an upstream tool exposed under a host tool's
// name (the demo server offering list_background_tasks, unprefixed) is a
// name collision like any other: the host tool keeps the name, the
// upstream's is reported in its server's conflicts, listed nowhere, and a
// call by that name reaches the host tool.
func TestHostToolNameCollision(t *testing.T) {
	svc := newEventRig(t).svc // a running task service
	doc := fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q, "args": ["-tools", %q], "tool_name_prefix": false}}}`,
		testmcp.Build(t), gateway.ToolListTasks)
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, doc)})
	t.Cleanup(cache.Close)
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Tasks: svc,
		Auth: principal.New([]settings.Key{{Key: "admin", User: "root", Role: settings.RoleAdmin}})}).Handler())
	t.Cleanup(srv.Close)
	a := &api{t: t, url: srv.URL, key: "admin"}

	code, res := a.do("GET", "/api/mcp/tools", "")
	if code != 200 {
		t.Fatalf("GET /api/mcp/tools: %d %v", code, res)
	}
	var servers []string
	for _, tool := range res["tools"].([]any) {
		if m := tool.(map[string]any); m["name"] == gateway.ToolListTasks {
			servers = append(servers, m["server"].(string))
		}
	}
	if len(servers) != 1 || servers[0] != "antler" {
		t.Errorf("%s is listed from servers %v, want once, from antler", gateway.ToolListTasks, servers)
	}

	code, res = a.do("GET", "/api/mcp/servers", "")
	if code != 200 {
		t.Fatalf("GET /api/mcp/servers: %d %v", code, res)
	}
	var conflicts any
	for _, st := range res["servers"].([]any) {
		if m := st.(map[string]any); m["name"] == "demo" {
			conflicts = m["conflicts"]
		}
	}
	got, _ := json.Marshal(conflicts)
	want := fmt.Sprintf(`[{"kept_from":"antler","name":%[1]q,"tool":%[1]q}]`, gateway.ToolListTasks)
	if string(got) != want {
		t.Errorf("demo's conflicts = %s, want %s", got, want)
	}

	code, res = a.do("POST", "/api/mcp/tools/"+gateway.ToolListTasks+"/call", `{"arguments": {}}`)
	if code != 200 {
		t.Fatalf("call: %d %v", code, res)
	}
	if sc, ok := res["structuredContent"].(map[string]any); !ok || sc["count"] != float64(0) {
		t.Errorf("the call was not answered by the host tool: %v", res)
	}
}
