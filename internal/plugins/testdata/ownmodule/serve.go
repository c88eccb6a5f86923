//go:build !wasip1

package main

import "github.com/antler-mcp/antler/sdk/sdkplugin"

// main serves the plugin as a process plugin; the Wasm build has no main
// work (the host calls its exports).
func main() { sdkplugin.Serve() }
