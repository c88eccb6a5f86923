// Package sdktest runs a Go plugin's handlers in-process, without Wasm, for
// the plugin's own unit tests. A call goes the way a Wasm call goes: the
// request is encoded with the ABI codec, handed to the same dispatcher the
// Wasm exports use, which decodes it and runs the handler the plugin
// registered in its init, and the encoded answer is decoded back. A plugin therefore sees exactly what it
// would see in the host, minus the sandbox.
//
// Test the plugin's package (package main) from a main_test.go in the same
// folder, so that its init has registered the handlers:
//
//	func TestDeniesDelete(t *testing.T) {
//		resp := sdktest.Intercept(t, &abi.InterceptRequest{Tool: "files_delete", OriginalTool: "delete"})
//		if resp.Action != abi.ActionDeny {
//			t.Errorf("delete was not denied: %+v", resp)
//		}
//	}
//
// The harness does not apply what the host adds around a call (the entry's
// config, secret grants, header and argument checks): set req.Config and
// req.Secrets as the host would. To check the real Wasm build too, use
// plugins/plugintest.
//
// A task driver is tested the same way with Submit, Status, Cancel and
// Answer; the test answers the driver's sdk.CallTool calls (what the host would send to
// the task's server) with a CallToolFunc, passed to the call or registered
// for the whole test with FakeCallTool (which also serves a helper that
// calls sdk.CallTool when the test calls it directly).
//
// What the plugin logs with sdk.Log goes to standard error, or, after
// CaptureLog, to a LogCapture the test reads.
package sdktest

import (
	"sync"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/guest"
	"github.com/antler-mcp/antler/sdk"
)

// mu serialises calls: a Wasm instance runs one call at a time, so plugins
// may keep caches in globals without locks. Parallel tests must not race on
// them here either.
var mu sync.Mutex

// Intercept runs the registered interceptor on req and returns its answer. The
// test fails at once when the plugin registered no interceptor. An answer with
// Error set (the plugin failed, or panicked) is returned as is: the host would
// fail the call closed.
func Intercept(t testing.TB, req *abi.InterceptRequest) abi.InterceptResponse {
	t.Helper()
	if guest.Features()&abi.FeatureIntercept == 0 {
		t.Fatal("sdktest: the plugin registered no interceptor (call sdk.HandleIntercept in its init)")
	}
	var enc abi.Encoder
	req.Encode(&enc)
	mu.Lock()
	var d guest.Dispatcher
	out := clone(d.Intercept(enc.Bytes()))
	mu.Unlock()
	var resp abi.InterceptResponse
	if err := resp.Decode(out); err != nil {
		t.Fatalf("sdktest: the interceptor's answer does not decode: %v", err)
	}
	return resp
}

// Result runs the registered result hook on req and returns its answer. The
// test fails at once when the plugin registered no result hook. A nil Result
// in the answer keeps the original result.
func Result(t testing.TB, req *abi.ResultRequest) abi.ResultResponse {
	t.Helper()
	if guest.Features()&abi.FeatureResultHook == 0 {
		t.Fatal("sdktest: the plugin registered no result hook (call sdk.HandleResult in its init)")
	}
	var enc abi.Encoder
	req.Encode(&enc)
	mu.Lock()
	var d guest.Dispatcher
	out := clone(d.Result(enc.Bytes()))
	mu.Unlock()
	var resp abi.ResultResponse
	if err := resp.Decode(out); err != nil {
		t.Fatalf("sdktest: the result hook's answer does not decode: %v", err)
	}
	return resp
}

// clone copies a dispatcher's answer, which is only valid until its next call:
// decoded byte fields alias it.
func clone(b []byte) []byte { return append([]byte(nil), b...) }

// CallToolFunc answers a task driver's sdk.CallTool calls during one
// harness call: the test plays the host (and the upstream behind it).
type CallToolFunc func(req *abi.CallToolRequest) abi.CallToolResponse

// Submit runs the registered task driver's Submit on req, with callTool
// serving its CallTool calls (nil: FakeCallTool's function, else every call
// is refused). The test fails at once when the plugin
// registered no task driver.
func Submit(t testing.TB, req *abi.TaskSubmitRequest, callTool CallToolFunc) abi.TaskDriverResponse {
	t.Helper()
	var enc abi.Encoder
	req.Encode(&enc)
	return task(t, "submit", enc.Bytes(), callTool)
}

// Status runs the registered task driver's Status on ref.
func Status(t testing.TB, ref *abi.TaskReference, callTool CallToolFunc) abi.TaskDriverResponse {
	t.Helper()
	var enc abi.Encoder
	ref.Encode(&enc)
	return task(t, "status", enc.Bytes(), callTool)
}

// Cancel runs the registered task driver's Cancel on ref.
func Cancel(t testing.TB, ref *abi.TaskReference, callTool CallToolFunc) abi.TaskDriverResponse {
	t.Helper()
	var enc abi.Encoder
	ref.Encode(&enc)
	return task(t, "cancel", enc.Bytes(), callTool)
}

// Answer runs the registered task driver's Answer on req (see
// sdk.TaskAnswerer). The test fails at once when the driver takes no answers.
func Answer(t testing.TB, req *abi.TaskAnswerRequest, callTool CallToolFunc) abi.TaskDriverResponse {
	t.Helper()
	if guest.Features()&abi.FeatureTaskAnswer == 0 {
		t.Fatal("sdktest: the registered task driver takes no answers (it does not implement sdk.TaskAnswerer)")
	}
	var enc abi.Encoder
	req.Encode(&enc)
	return task(t, "answer", enc.Bytes(), callTool)
}

func task(t testing.TB, op string, in []byte, callTool CallToolFunc) abi.TaskDriverResponse {
	t.Helper()
	if guest.Features()&abi.FeatureTaskDriver == 0 {
		t.Fatal("sdktest: the plugin registered no task driver (call sdk.HandleTasks in its init)")
	}
	if callTool == nil {
		callTool = CallToolFunc(guest.FallbackCallTool())
	}
	if callTool == nil {
		callTool = func(*abi.CallToolRequest) abi.CallToolResponse {
			return abi.CallToolResponse{Error: "sdktest: this call serves no CallTool"}
		}
	}
	mu.Lock()
	var d guest.Dispatcher
	out := clone(d.TaskWith(op, in, guest.CallToolFunc(callTool)))
	mu.Unlock()
	var resp abi.TaskDriverResponse
	if err := resp.Decode(out); err != nil {
		t.Fatalf("sdktest: the task driver's answer does not decode: %v", err)
	}
	return resp
}

// FakeCallTool makes f answer sdk.CallTool for the rest of the test: the
// calls of a task driver run by Submit, Status or Cancel with a nil
// callTool, and calls made outside them (a helper of the driver the test
// calls directly). Tests that call it must not run in parallel with each
// other: there is one sdk.CallTool per process.
func FakeCallTool(t testing.TB, f CallToolFunc) {
	t.Helper()
	prev := guest.SetFallbackCallTool(guest.CallToolFunc(f))
	t.Cleanup(func() { guest.SetFallbackCallTool(prev) })
}

// LogLine is one line the plugin logged with sdk.Log.
type LogLine struct {
	Level   sdk.Level
	Message string
}

// LogCapture holds the lines logged since CaptureLog.
type LogCapture struct {
	mu    sync.Mutex
	lines []LogLine
}

// Lines returns the lines logged so far, oldest first.
func (c *LogCapture) Lines() []LogLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]LogLine(nil), c.lines...)
}

// CaptureLog records every sdk.Log line until the test ends, instead of
// writing it to standard error. Tests that call it must not run in parallel
// with each other: there is one sdk.Log per process.
func CaptureLog(t testing.TB) *LogCapture {
	t.Helper()
	c := &LogCapture{}
	prev := guest.SetLog(func(level int32, msg string) {
		c.mu.Lock()
		c.lines = append(c.lines, LogLine{Level: sdk.Level(level), Message: msg})
		c.mu.Unlock()
	})
	t.Cleanup(func() { guest.SetLog(prev) })
	return c
}
