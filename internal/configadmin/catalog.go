package configadmin

import (
	"context"
	"errors"
	"net/http"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/catalog"
)

// errNoCatalog answers the catalog's methods when no store is open.
func errNoCatalog() error {
	return apierror.New(http.StatusServiceUnavailable, "The tool catalog is not available (no store is open)")
}

// PendingTools lists the tool catalog's pending changes with their diffs.
func (a *Admin) PendingTools(ctx context.Context) ([]catalog.Change, error) {
	if a.opts.Catalog == nil {
		return nil, errNoCatalog()
	}
	return a.opts.Catalog.Pending(ctx)
}

// ApproveTools approves the pending definitions of server's tools (all of
// them when tools is empty) as the actor WithActor named, rebuilds the
// tool set so the tools held back appear, and returns the tools approved.
func (a *Admin) ApproveTools(ctx context.Context, server string, tools []string) ([]string, error) {
	if a.opts.Catalog == nil {
		return nil, errNoCatalog()
	}
	if server == "" {
		return nil, apierror.New(http.StatusBadRequest, "server: must be a non-empty string")
	}
	by, _ := actorOf(ctx)
	approved, err := a.opts.Catalog.Approve(ctx, server, tools, by)
	if errors.Is(err, catalog.ErrNothingPending) {
		return nil, apierror.New(http.StatusNotFound, "No pending tool definition to approve on MCP server '%s'", server)
	}
	if err != nil {
		return nil, err
	}
	a.opts.Tools.Rebuild()
	a.log.Info("MCP tool catalog approved", "by", by, "server", server, "tools", approved)
	return approved, nil
}
