//go:build !wasip1

package guest

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

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
	mu       sync.Mutex                   // serialises TaskWith
	inFlight atomic.Pointer[CallToolFunc] // the running task call's call_tool
	fallback atomic.Pointer[CallToolFunc] // SetFallbackCallTool's
	log      atomic.Pointer[LogFunc]      // SetLog's; nil: standard error
}

// TaskWith is Task with callTool serving the driver's CallTool calls during
// this call (nil: the fallback does). Calls are serialised.
func (d *Dispatcher) TaskWith(op string, in []byte, callTool CallToolFunc) []byte {
	native.mu.Lock()
	defer native.mu.Unlock()
	native.inFlight.Store(&callTool)
	defer native.inFlight.Store(nil)
	return d.Task(op, in)
}

// CallTool serves sdk.CallTool outside Wasm: the running task call's
// call_tool, else the fallback, else a refusal.
func CallTool(req *abi.CallToolRequest) abi.CallToolResponse {
	if f := native.inFlight.Load(); f != nil && *f != nil {
		return (*f)(req)
	}
	if f := FallbackCallTool(); f != nil {
		return f(req)
	}
	return abi.CallToolResponse{Error: "the host refused the call: no task driver call is in flight"}
}

// SetFallbackCallTool makes f serve sdk.CallTool calls made while no task
// call with a call_tool is running (nil: refuse them again) and returns the
// one it replaces.
func SetFallbackCallTool(f CallToolFunc) CallToolFunc {
	var p *CallToolFunc
	if f != nil {
		p = &f
	}
	if old := native.fallback.Swap(p); old != nil {
		return *old
	}
	return nil
}

// FallbackCallTool returns SetFallbackCallTool's function, or nil.
func FallbackCallTool() CallToolFunc {
	if f := native.fallback.Load(); f != nil {
		return *f
	}
	return nil
}

// Log serves sdk.Log outside Wasm: the function SetLog installed, else a
// line on standard error (which a process plugin's host does not read).
func Log(level int32, msg string) {
	if f := native.log.Load(); f != nil && *f != nil {
		(*f)(level, msg)
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %s\n", LevelName(level), msg)
}

// SetLog makes f receive sdk.Log lines (nil: standard error again) and
// returns the one it replaces.
func SetLog(f LogFunc) LogFunc {
	var p *LogFunc
	if f != nil {
		p = &f
	}
	if old := native.log.Swap(p); old != nil {
		return *old
	}
	return nil
}
