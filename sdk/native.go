//go:build !wasip1

package sdk

import (
	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/guest"
)

// Outside Wasm (a process plugin, or the sdktest harness) the host's imports
// are served in-process.

func hostLog(level int32, msg string) { guest.Log(level, msg) }

func callTool(req *abi.CallToolRequest) abi.CallToolResponse { return guest.CallTool(req) }
