//go:build !wasip1

package main

import (
	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk"
	"github.com/antler-mcp/antler/sdk/sdkplugin"
)

type driver struct{}

func (driver) Submit(*abi.TaskSubmitRequest) abi.TaskDriverResponse { return reply("submit") }
func (driver) Status(*abi.TaskReference) abi.TaskDriverResponse     { return reply("status") }
func (driver) Cancel(*abi.TaskReference) abi.TaskDriverResponse     { return reply("cancel") }

func main() {
	sdk.HandleTasks(driver{})
	sdkplugin.Serve()
}
