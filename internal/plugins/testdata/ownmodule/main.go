// Command audit is a plugin in a module of its own, as a plugin author
// writes one outside this repository: it logs each call it sees and refuses
// deletes. plugins' TestPluginInItsOwnModule copies this folder to a
// temporary directory, gives it a go.mod that requires
// github.com/antler-mcp/antler (replaced by the checkout), and builds, vets,
// tests and loads it there.
package main

import "github.com/antler-mcp/antler/sdk"

func audit(req *sdk.Request) sdk.Response {
	sdk.Log(sdk.LevelInfo, "audit: "+req.UserID+" called "+req.Tool)
	if req.OriginalTool == "delete" {
		return sdk.Deny("Deleting is not allowed here.")
	}
	return sdk.SetHeader(sdk.Continue(), "X-Audited", "yes")
}

func init() { sdk.HandleIntercept(audit) }
