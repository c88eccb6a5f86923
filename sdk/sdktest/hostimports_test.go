package sdktest_test

import (
	"reflect"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk"
	"github.com/antler-mcp/antler/sdk/sdktest"
)

func TestCaptureLog(t *testing.T) {
	register(t, func(r *sdk.Request) sdk.Response {
		sdk.Log(sdk.LevelInfo, "checking "+r.Tool)
		sdk.Log(sdk.LevelDebug, "") // an empty line is not logged
		if r.OriginalTool == "delete" {
			sdk.Log(sdk.LevelWarn, "refused "+r.Tool)
			return sdk.Deny("Deleting is not allowed here.")
		}
		return sdk.Continue()
	}, nil)
	logs := sdktest.CaptureLog(t)
	sdktest.Intercept(t, &abi.InterceptRequest{Tool: "files_read", OriginalTool: "read"})
	sdktest.Intercept(t, &abi.InterceptRequest{Tool: "files_delete", OriginalTool: "delete"})
	sdk.Log(sdk.LevelError, "outside a call") // a helper the test calls directly
	want := []sdktest.LogLine{
		{Level: sdk.LevelInfo, Message: "checking files_read"},
		{Level: sdk.LevelInfo, Message: "checking files_delete"},
		{Level: sdk.LevelWarn, Message: "refused files_delete"},
		{Level: sdk.LevelError, Message: "outside a call"},
	}
	if got := logs.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("logged %+v, want %+v", got, want)
	}
}

// echoDriver submits by calling the upstream's "start" tool through the
// host and takes the task id from its answer.
type echoDriver struct{}

func (echoDriver) Submit(req *abi.TaskSubmitRequest) abi.TaskDriverResponse {
	resp := sdk.CallTool(&abi.CallToolRequest{Server: req.ServerName, Tool: "start"})
	if resp.Error != "" {
		return abi.TaskDriverResponse{Error: resp.Error}
	}
	return abi.TaskDriverResponse{RemoteTaskID: string(resp.Result)}
}
func (echoDriver) Status(*abi.TaskReference) abi.TaskDriverResponse { return abi.TaskDriverResponse{} }
func (echoDriver) Cancel(*abi.TaskReference) abi.TaskDriverResponse { return abi.TaskDriverResponse{} }

func TestFakeCallTool(t *testing.T) {
	sdk.HandleTasks(echoDriver{})
	t.Cleanup(func() { sdk.HandleTasks(nil) })
	answer := func(id string) sdktest.CallToolFunc {
		return func(*abi.CallToolRequest) abi.CallToolResponse { return abi.CallToolResponse{Result: []byte(id)} }
	}
	submit := func(t *testing.T, callTool sdktest.CallToolFunc) abi.TaskDriverResponse {
		return sdktest.Submit(t, &abi.TaskSubmitRequest{ServerName: "jobs"}, callTool)
	}
	direct := func() abi.CallToolResponse { return sdk.CallTool(&abi.CallToolRequest{Server: "jobs", Tool: "start"}) }

	t.Run("no fake", func(t *testing.T) {
		if resp := direct(); resp.Error == "" {
			t.Errorf("a CallTool outside any call was answered: %+v", resp)
		}
		if resp := submit(t, nil); resp.Error != "sdktest: this call serves no CallTool" {
			t.Errorf("submit without a CallTool: %+v", resp)
		}
		if resp := submit(t, answer("7")); resp.RemoteTaskID != "7" {
			t.Errorf("submit with a CallTool: %+v", resp)
		}
	})
	t.Run("fake", func(t *testing.T) {
		sdktest.FakeCallTool(t, answer("fake"))
		if resp := direct(); string(resp.Result) != "fake" {
			t.Errorf("a CallTool outside any call: %+v, want the fake's answer", resp)
		}
		if resp := submit(t, nil); resp.RemoteTaskID != "fake" {
			t.Errorf("submit without a CallTool: %+v, want the fake's answer", resp)
		}
		if resp := submit(t, answer("7")); resp.RemoteTaskID != "7" {
			t.Errorf("submit with its own CallTool: %+v, want that one's answer", resp)
		}
	})
	t.Run("fake removed when its test ends", func(t *testing.T) {
		if resp := direct(); resp.Error == "" {
			t.Errorf("the fake outlived its test: %+v", resp)
		}
	})
}
