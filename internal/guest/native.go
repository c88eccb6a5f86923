//go:build !wasip1

package guest

import (
	"fmt"
	"os"
	"sync"

	"github.com/antler-mcp/antler/abi"
)

// CallToolFunc serves a driver's call_tool: what the host does with a
// CallToolRequest in a Wasm instance.
type CallToolFunc func(req *abi.CallToolRequest) abi.CallToolResponse

// LogFunc receives a plugin's log lines: what the host does with the log
// import in a Wasm instance.
type LogFunc func(level int32, msg string)

// native is what sdk.CallTool and sdk.Log reach outside Wasm (a process
// plugin, or the sdktest harness). Task calls run one at a time, as in a
// Wasm instance, so a driver may keep caches in globals without locks.
var native struct {
	calls sync.Mutex // serialises TaskWith

	mu       sync.RWMutex // guards the rest
	inFlight CallToolFunc // the running task call's call_tool
	fallback CallToolFunc // SetFallbackCallTool's
	log      LogFunc      // SetLog's; nil: standard error
}

// TaskWith is Task with callTool serving the driver's CallTool calls during
// this call (nil: the fallback does). Calls are serialised.
func (d *Dispatcher) TaskWith(op string, in []byte, callTool CallToolFunc) []byte {
	native.calls.Lock()
	defer native.calls.Unlock()
	native.mu.Lock()
	native.inFlight = callTool
	native.mu.Unlock()
	defer func() {
		native.mu.Lock()
		native.inFlight = nil
		native.mu.Unlock()
	}()
	return d.Task(op, in)
}

// CallTool serves sdk.CallTool outside Wasm: the running task call's
// call_tool, else the fallback, else a refusal.
func CallTool(req *abi.CallToolRequest) abi.CallToolResponse {
	native.mu.RLock()
	f := native.inFlight
	if f == nil {
		f = native.fallback
	}
	native.mu.RUnlock()
	if f == nil {
		return abi.CallToolResponse{Error: "the host refused the call: no task driver call is in flight"}
	}
	return f(req)
}

// SetFallbackCallTool makes f serve sdk.CallTool calls made while no task
// call with a call_tool is running (nil: refuse them again) and returns the
// one it replaces.
func SetFallbackCallTool(f CallToolFunc) CallToolFunc {
	native.mu.Lock()
	defer native.mu.Unlock()
	old := native.fallback
	native.fallback = f
	return old
}

// FallbackCallTool returns SetFallbackCallTool's function, or nil.
func FallbackCallTool() CallToolFunc {
	native.mu.RLock()
	defer native.mu.RUnlock()
	return native.fallback
}

// Log serves sdk.Log outside Wasm: the function SetLog installed, else a
// line on standard error (which a process plugin's host does not read).
func Log(level int32, msg string) {
	native.mu.RLock()
	f := native.log
	native.mu.RUnlock()
	if f != nil {
		f(level, msg)
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %s\n", LevelName(level), msg)
}

// SetLog makes f receive sdk.Log lines (nil: standard error again) and
// returns the one it replaces.
func SetLog(f LogFunc) LogFunc {
	native.mu.Lock()
	defer native.mu.Unlock()
	old := native.log
	native.log = f
	return old
}
