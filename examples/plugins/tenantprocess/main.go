// Command tenantprocess is the tenant-header interceptor of
// examples/plugins/tenantheader served as a separate process
// (hashicorp/go-plugin over gRPC) instead of a Wasm module: the same handler
// code, the same messages.
//
// Build:  go build -o tenantprocess .
// Config: {"kind": "process", "path": "./tenantprocess", "grants": {"secrets": ["tenant"]}}
package main

import (
	"github.com/antler-mcp/antler/sdk"
	"github.com/antler-mcp/antler/sdk/sdkplugin"
)

func intercept(req *sdk.Request) sdk.Response {
	value := sdk.Secret(req, "tenant")
	if value == "" {
		return sdk.Deny("This tool needs your tenant token: send it as the 'tenant' secret.")
	}
	return sdk.SetHeader(sdk.Continue(), "X-Tenant-Token", value)
}

func main() {
	sdk.HandleIntercept(intercept)
	sdkplugin.Serve()
}
