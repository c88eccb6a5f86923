package taskservice

import (
	"context"
	"encoding/json"

	"github.com/antler-mcp/antler/host/task/ordinary"
	"github.com/antler-mcp/antler/host/toolcache"
)

// CacheCaller calls task tools through the tool cache: the same upstream
// connections, stdio sessions and credential chain as agents' calls, by the
// tools' raw names (agents never see status and cancel tools).
type CacheCaller struct {
	Cache *toolcache.Cache
}

var _ ordinary.ToolCaller = CacheCaller{}

// CallTool implements ordinary.ToolCaller.
func (c CacheCaller) CallTool(ctx context.Context, call ordinary.ToolCall) (json.RawMessage, error) {
	snap, err := c.Cache.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	secrets := call.Secrets
	if !call.RequestScopedHeaders {
		secrets = nil // background calls never carry per-request credentials
	}
	return snap.CallServerTool(ctx, call.Server, call.Tool, call.Arguments, call.UserID, call.ThreadID, secrets, call.RequestScopedHeaders)
}
