// Package testgateway builds the gateway for tests as `antler serve` wires
// it: the REST door, the MCP door over the same per-principal call slots,
// and the pages served without a key (the OpenAPI document, the
// dashboard). The MCP door is closed when the test ends.
package testgateway

import (
	"net/http"
	"testing"

	"github.com/antler-mcp/antler/internal/dashboard"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/openapi"
)

// Version is the serverInfo version of the MCP door New builds.
const Version = "test"

// New returns the gateway of opts. Where opts leaves them unset, it adds
// the MCP door (over opts.Cache and opts.Tasks, logging to opts.Logger;
// each of door may adjust its options) and the pages.
func New(t testing.TB, opts gateway.Options, door ...func(*mcpserver.Options)) *gateway.Server {
	t.Helper()
	if opts.MCP == nil {
		mopts := mcpserver.Options{Cache: opts.Cache, Tasks: opts.Tasks, Logger: opts.Logger, Version: Version}
		for _, f := range door {
			f(&mopts)
		}
		opts.MCP = func(slots gateway.DoorSlots) gateway.MCPDoor {
			mopts.CallSlots, mopts.StreamSlots = slots.Calls, slots.Streams
			return mcpserver.New(mopts)
		}
	}
	if opts.Pages == nil {
		opts.Pages = map[string]http.Handler{openapi.Path: openapi.Handler(Version), dashboard.Prefix + "*": dashboard.Handler()}
	}
	gw := gateway.New(opts)
	t.Cleanup(gw.Close)
	return gw
}

// The MCP door the CLI and New build is the gateway's MCPDoor.
var _ gateway.MCPDoor = (*mcpserver.Server)(nil)
