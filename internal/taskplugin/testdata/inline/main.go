// Command inline is a server-level task driver (mcpServers.<name>.driver)
// for the host's tests: it runs an MCP task tool's call as a plain tool call
// through the host at submit, keeps the result in the task's driver data,
// and reports it completed on the first status poll, wrapped so a test can
// tell the plugin ran the task and not the built-in spec driver. The tool
// is driver_data "tool", which the host sets for a spec task tool.
package main

import (
	"encoding/json"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk"
)

func init() { sdk.HandleTasks(driver{}) }

type driver struct{}

func data(b []byte) map[string]string {
	m := map[string]string{}
	_ = json.Unmarshal(b, &m)
	return m
}

func (driver) Submit(req *abi.TaskSubmitRequest) abi.TaskDriverResponse {
	tool := data(req.DriverData)["tool"]
	if tool == "" {
		return abi.TaskDriverResponse{Error: "no tool in the driver data"}
	}
	resp := sdk.CallTool(&abi.CallToolRequest{Server: req.ServerName, Tool: tool, Arguments: req.Arguments, RequestScopedHeaders: true})
	if resp.Error != "" {
		return abi.TaskDriverResponse{Error: resp.Error, Retryable: true}
	}
	out, _ := json.Marshal(map[string]any{"via": "inline driver", "result": json.RawMessage(resp.Result)})
	d, _ := json.Marshal(map[string]string{"result": string(out)})
	return abi.TaskDriverResponse{RemoteTaskID: "inline-" + req.LocalTaskID, DriverData: d,
		Snapshot: &abi.TaskSnapshot{Status: abi.StatusWorking}}
}

func (driver) Status(ref *abi.TaskReference) abi.TaskDriverResponse {
	res := data(ref.DriverData)["result"]
	if res == "" {
		return abi.TaskDriverResponse{Error: "the task has no result"}
	}
	return abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{Status: abi.StatusCompleted, Result: []byte(res)}}
}

func (driver) Cancel(*abi.TaskReference) abi.TaskDriverResponse {
	return abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{Status: abi.StatusCancelled}}
}
