//go:build !wasip1

package main

import "github.com/antler-mcp/antler/sdk/sdkplugin"

// main serves the driver as a process plugin.
func main() { sdkplugin.Serve() }
