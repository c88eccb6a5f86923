package taskservice

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/antler-mcp/antler/host/config"
	"github.com/antler-mcp/antler/host/dispatch"
	"github.com/antler-mcp/antler/host/task/ordinary"
	"github.com/antler-mcp/antler/host/toolcache"
)

// CacheCaller calls task tools through the tool cache: the same upstream
// connections, stdio sessions and credential chain as agents' calls, by the
// tools' raw names (agents never see status and cancel tools).
type CacheCaller struct {
	Cache *toolcache.Cache
	// Frozen is the task configuration taken at startup (nil: no check).
	// A snapshot whose task-enabled servers or interceptors differ from it
	// is refused with a *DriftError, so background calls never run against
	// a configuration their tasks were not submitted under.
	Frozen *config.TaskFreeze
}

// DriftError reports task-enabled configuration that changed after startup.
type DriftError struct{ Names []string }

func (e *DriftError) Error() string {
	return "MCP task-enabled server configuration changed after Antler started (" + strings.Join(e.Names, ", ") +
		"); restart Antler before using durable task tools"
}

var _ ordinary.ToolCaller = CacheCaller{}

// CallTool implements ordinary.ToolCaller.
func (c CacheCaller) CallTool(ctx context.Context, call ordinary.ToolCall) (json.RawMessage, error) {
	snap, err := c.Cache.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if c.Frozen != nil {
		if names := c.Frozen.Drift(snap.TaskFreeze); len(names) > 0 {
			return nil, &DriftError{Names: names}
		}
	}
	secrets := call.Secrets
	if !call.RequestScopedHeaders {
		secrets = nil // background calls never carry per-request credentials
	}
	return snap.CallServerTool(ctx, call.Server, call.Tool, dispatch.Request{
		Arguments: call.Arguments, UserID: call.UserID, ThreadID: call.ThreadID, Secrets: secrets,
	}, call.RequestScopedHeaders)
}
