package sdk_test

import (
	"fmt"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk"
)

// tenantHeader is a plugin's interceptor: it forwards the caller's granted
// tenant secret as a header, and refuses the call when there is none.
func tenantHeader(req *sdk.Request) sdk.Response {
	tenant := sdk.Secret(req, "tenant")
	if tenant == "" {
		return sdk.Deny("This tool needs your tenant token.")
	}
	sdk.Log(sdk.LevelInfo, "tenant header set for "+req.Tool)
	return sdk.SetHeader(sdk.Continue(), "X-Tenant", tenant)
}

// A plugin's main.go registers its handler in init and has an empty main.
func init() { sdk.HandleIntercept(tenantHeader) }

// Example shows what the interceptor answers; a plugin's own test runs it
// through the host's codec with sdktest.Intercept.
func Example() {
	granted := &sdk.Request{Tool: "crm_find", Secrets: []abi.Header{{Name: "tenant", Value: "acme"}}}
	resp := tenantHeader(granted)
	fmt.Println(resp.Action == abi.ActionContinue, resp.SetHeaders[0].Name, resp.SetHeaders[0].Value)

	resp = tenantHeader(&sdk.Request{Tool: "crm_find"})
	fmt.Println(resp.Action == abi.ActionDeny, resp.Message)
	// Output:
	// true X-Tenant acme
	// true This tool needs your tenant token.
}

// ExampleLevel shows the level names the host's log uses.
func ExampleLevel() {
	fmt.Println(sdk.LevelDebug, sdk.LevelInfo, sdk.LevelWarn, sdk.LevelError, sdk.Level(7))
	// Output: debug info warn error level 7
}
