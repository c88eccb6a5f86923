package sdktest_test

import (
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk"
	"github.com/antler-mcp/antler/sdk/sdktest"
)

// denyDelete is the plugin under test. In a real plugin it lives in main.go
// (package main) and its init registers it, as here.
func denyDelete(req *sdk.Request) sdk.Response {
	if req.OriginalTool == "delete" {
		return sdk.Deny("Deleting files is not allowed here.")
	}
	return sdk.SetHeader(sdk.Continue(), "X-Reviewed-By", req.UserID)
}

func init() { sdk.HandleIntercept(denyDelete) }

// testDenyDelete is the plugin's test: in the plugin's main_test.go, next to
// main.go, it is a TestDenyDelete that go test runs after the plugin's init.
func testDenyDelete(t *testing.T) {
	resp := sdktest.Intercept(t, &abi.InterceptRequest{Server: "files", Tool: "files_delete", OriginalTool: "delete"})
	if resp.Action != abi.ActionDeny || resp.Message != "Deleting files is not allowed here." {
		t.Errorf("delete: %+v, want a denial", resp)
	}
	resp = sdktest.Intercept(t, &abi.InterceptRequest{Server: "files", Tool: "files_read", OriginalTool: "read", UserID: "alice"})
	if resp.Action != abi.ActionContinue || len(resp.SetHeaders) != 1 || resp.SetHeaders[0].Value != "alice" {
		t.Errorf("read: %+v, want it forwarded with X-Reviewed-By: alice", resp)
	}
}

// Example shows a plugin and its in-process test; testDenyDelete is what its
// main_test.go would hold as TestDenyDelete.
func Example() {
	// go test runs the plugin's tests, each calling the plugin through
	// sdktest.Intercept (or sdktest.Result for a result hook) exactly as the
	// host calls its Wasm build: encoded, dispatched, decoded.
}
