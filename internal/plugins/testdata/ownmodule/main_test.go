package main

import (
	"reflect"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk"
	"github.com/antler-mcp/antler/sdk/sdktest"
)

func TestAudit(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  abi.InterceptRequest
		want abi.InterceptResponse
		log  string
	}{
		{name: "read is forwarded with the header",
			req:  abi.InterceptRequest{Server: "files", Tool: "files_read", OriginalTool: "read", UserID: "alice"},
			want: abi.InterceptResponse{Action: abi.ActionContinue, SetHeaders: []abi.Header{{Name: "X-Audited", Value: "yes"}}},
			log:  "audit: alice called files_read"},
		{name: "delete is refused",
			req:  abi.InterceptRequest{Server: "files", Tool: "files_delete", OriginalTool: "delete", UserID: "bob"},
			want: abi.InterceptResponse{Action: abi.ActionDeny, Message: "Deleting is not allowed here."},
			log:  "audit: bob called files_delete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := sdktest.CaptureLog(t)
			if got := sdktest.Intercept(t, &tc.req); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("answer %+v, want %+v", got, tc.want)
			}
			want := []sdktest.LogLine{{Level: sdk.LevelInfo, Message: tc.log}}
			if got := logs.Lines(); !reflect.DeepEqual(got, want) {
				t.Errorf("logged %+v, want %+v", got, want)
			}
		})
	}
}
