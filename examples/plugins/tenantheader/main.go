// Command tenantheader is an example Antler interceptor: it sends a tenant
// credential, taken from a secret the call carries (granted to this plugin in
// the config), as an HTTP header to the upstream server.
//
// Build:  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o tenantheader.wasm .
//
// Config: {"header": "X-Tenant-Token", "secret": "tenant"} (the defaults).
package main

import (
	"encoding/json"

	"github.com/antler-mcp/antler/sdk"
)

type settings struct {
	Header string `json:"header"`
	Secret string `json:"secret"`
}

// parsed caches the decoded config by its bytes: config is the same on every
// call, and decoding JSON inside Wasm is the slow part of a call.
var parsed struct {
	raw string
	s   settings
}

func config(raw []byte) settings {
	if parsed.raw != string(raw) || parsed.s.Header == "" { // Header is never empty once parsed
		s := settings{Header: "X-Tenant-Token", Secret: "tenant"}
		if len(raw) > 0 {
			_ = json.Unmarshal(raw, &s)
		}
		if s.Header == "" {
			s.Header = "X-Tenant-Token"
		}
		if s.Secret == "" {
			s.Secret = "tenant"
		}
		parsed.raw, parsed.s = string(raw), s
	}
	return parsed.s
}

func intercept(req *sdk.Request) sdk.Response {
	s := config(req.Config)
	value := sdk.Secret(req, s.Secret)
	if value == "" {
		return sdk.Deny("This tool needs your tenant token: send it as the '" + s.Secret + "' secret.")
	}
	return sdk.SetHeader(sdk.Continue(), s.Header, value)
}

func init() { sdk.HandleIntercept(intercept) }

func main() {}
