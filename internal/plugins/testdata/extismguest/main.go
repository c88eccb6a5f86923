// Command extismguest is an Antler interceptor written by hand against the
// Extism import module (extism:host/env), as an Extism PDK would build it:
// the test that Antler's "extism" carrier runs such modules. It sets
// X-Tenant-Token from the granted "tenant" secret.
package main

import (
	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins/testdata/extismkernel"
)

//go:wasmexport antler_info
func info() int32 {
	var e abi.Encoder
	i := abi.Info{Major: abi.Major, Minor: abi.Minor, Features: abi.FeatureIntercept}
	i.Encode(&e)
	extismkernel.Output(e.Bytes())
	return 0
}

//go:wasmexport antler_intercept
func intercept() int32 {
	var req abi.InterceptRequest
	if err := req.Decode(extismkernel.Input()); err != nil {
		return 1
	}
	resp := abi.InterceptResponse{Action: abi.ActionDeny, Message: "no tenant secret"}
	for _, s := range req.Secrets {
		if s.Name == "tenant" {
			resp = abi.InterceptResponse{SetHeaders: []abi.Header{{Name: "X-Tenant-Token", Value: s.Value}}}
		}
	}
	var e abi.Encoder
	resp.Encode(&e)
	extismkernel.Output(e.Bytes())
	return 0
}

func main() {}
