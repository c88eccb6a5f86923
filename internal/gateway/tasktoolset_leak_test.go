package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// TestToolListsDoNotShowTaskDrivers performs the attack an agent key could
// make on both doors: a durable task's submit tool carries its toolset to
// every principal, and its plugin driver's entry once went with it, with
// the driver's config resolved ($VAR values from the host's environment),
// its literal secrets and the driver's host path. Neither list shows any of
// them; the toolset's tool names stay.
func TestToolListsDoNotShowTaskDrivers(t *testing.T) {
	const envSecret, literalSecret, hostPath = "s3cr3t-driver-token", "hunter2-literal", "/opt/antler/drivers/jobsdriver"
	t.Setenv("ANTLER_TEST_DRIVER_SECRET", envSecret)
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, "task_toolsets": [{"name": "report-generation",
		"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report",
		"driver": {"kind": "process", "path": %q,
		           "config": {"api_token": "$ANTLER_TEST_DRIVER_SECRET", "password": %q}}}]}}}`, testmcp.BuildReports(t), hostPath, literalSecret)
	a := newAPI(t, doc,
		settings.Key{Key: "admin-key", User: "root", Role: settings.RoleAdmin},
		settings.Key{Key: "agent-key", User: "alice", Role: settings.RoleAgent}).as("agent-key")

	code, out := a.do("GET", "/api/mcp/tools", "")
	if code != 200 {
		t.Fatalf("GET /api/mcp/tools as an agent: %d %v", code, out)
	}
	rest, _ := json.Marshal(out)

	c := mcpClient(t, a.url, mcp.LATEST_PROTOCOL_VERSION, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer agent-key"}))
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	door, _ := json.Marshal(list)

	for name, body := range map[string]string{"GET /api/mcp/tools": string(rest), "tools/list on /mcp": string(door)} {
		if !strings.Contains(body, `"submit_tool":"submit_report"`) {
			t.Errorf("%s does not show the submit tool's toolset: %.2000s", name, body)
		}
		for _, leak := range []struct{ what, value string }{
			{"the value of an environment variable named in the driver's config", envSecret},
			{"a literal secret of the driver's config", literalSecret},
			{"the driver's host path", hostPath},
		} {
			if strings.Contains(body, leak.value) {
				t.Errorf("%s, as an agent, shows %s", name, leak.what)
			}
		}
	}
}
