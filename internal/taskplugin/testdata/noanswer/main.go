// Command noanswer is a task driver without answers, for the host's tests:
// its task asks a question at once (input_required) but the driver has no
// answer entry point. Built as Wasm it is written without the SDK and
// claims ABI 1.0 (a driver from before answers existed); as a process it is
// an SDK driver that does not implement sdk.TaskAnswerer.
package main

import "github.com/antler-mcp/antler/abi"

// reply is the driver's answer to one entry point.
func reply(op string) abi.TaskDriverResponse {
	switch op {
	case "submit":
		return abi.TaskDriverResponse{RemoteTaskID: "1", Snapshot: &abi.TaskSnapshot{Status: abi.StatusSubmitted}}
	case "cancel":
		return abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{Status: abi.StatusCancelled}}
	}
	return abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{Status: abi.StatusInputRequired, InputRequired: []byte(`{"message":"Which colour?"}`)}}
}
