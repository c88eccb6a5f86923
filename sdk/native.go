//go:build !wasip1

package sdk

import (
	"sync"

	"github.com/antler-mcp/antler/abi"
)

// native is the call_tool of the driver call running outside Wasm (a
// process plugin, or the sdktest harness). Task calls run one at a time, as
// in a Wasm instance, so a driver may keep caches in globals without locks.
var native struct {
	mu       sync.Mutex
	callTool func(*abi.CallToolRequest) abi.CallToolResponse
}

// CallTool asks the host to call an upstream tool (task drivers only; the
// host keeps owning transports and credentials, and refuses a server the
// task is not bound to).
func CallTool(req *abi.CallToolRequest) abi.CallToolResponse {
	if native.callTool == nil {
		return abi.CallToolResponse{Error: "the host refused the call: no task driver call is in flight"}
	}
	return native.callTool(req)
}

// TaskWith is Task with callTool serving the driver's CallTool calls during
// this call. Calls are serialised.
func (d *Dispatcher) TaskWith(op string, in []byte, callTool func(*abi.CallToolRequest) abi.CallToolResponse) []byte {
	native.mu.Lock()
	defer native.mu.Unlock()
	native.callTool = callTool
	defer func() { native.callTool = nil }()
	return d.Task(op, in)
}
