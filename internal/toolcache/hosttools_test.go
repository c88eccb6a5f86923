package toolcache_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// TestReservedHostToolNames: a host tool's name is taken before any
// server's, so the upstream tool exposed under it is a conflict kept from
// the host tool's server, and neither in the tool set nor callable; the
// same reservation again keeps the published tools.
func TestReservedHostToolNames(t *testing.T) {
	b := newBundle(t, doc(`"demo": `+stdio(testmcp.Build(t), `"tool_name_prefix": false`, "-tools", "list_background_tasks")))
	if _, ok := b.snap().Tool("list_background_tasks"); !ok {
		t.Fatal("without a reservation the upstream tool is in the tool set")
	}
	host := []toolcache.Tool{{Name: "list_background_tasks", Server: "antler"}, {Name: "cancel_background_task", Server: "antler"}}
	b.cache.ReserveHostTools(host)
	s := b.snap()
	if tool, ok := s.Tool("list_background_tasks"); ok {
		t.Errorf("the reserved name is still served by %q", tool.Server)
	}
	got, _ := json.Marshal(status(t, s, "demo").Conflicts)
	if want := `[{"tool":"list_background_tasks","name":"list_background_tasks","kept_from":"antler"}]`; string(got) != want {
		t.Errorf("demo's conflicts = %s, want %s", got, want)
	}
	_, err := s.Invoke(context.Background(), dispatch.Request{Name: "list_background_tasks", Arguments: json.RawMessage(`{}`)})
	if !errors.Is(err, toolcache.ErrUnknownTool) {
		t.Errorf("a call by the reserved name reached an upstream: %v", err)
	}
	b.cache.ReserveHostTools(host)
	if again := b.snap(); again.Generation != s.Generation {
		t.Errorf("the same reservation again rebuilt the tools (generation %d → %d)", s.Generation, again.Generation)
	}
}
