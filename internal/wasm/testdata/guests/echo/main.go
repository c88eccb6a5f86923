// Command echo is a well-behaved test guest: it reports what it saw of the
// call in response headers, so tests can check that each answer belongs to
// its own request and which instance served it.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"

	"github.com/antler-mcp/antler/sdk"
)

var (
	calls    int    // calls served by this instance
	instance string // random per instance when the Random grant is given
)

func intercept(req *sdk.Request) sdk.Response {
	calls++
	if instance == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		instance = hex.EncodeToString(b[:])
	}
	r := sdk.Continue()
	r = sdk.SetHeader(r, "X-Seen-Tool", req.Tool)
	r = sdk.SetHeader(r, "X-Echo-Id", req.ThreadID)
	r = sdk.SetHeader(r, "X-User", req.UserID)
	r = sdk.SetHeader(r, "X-Config", string(req.Config))
	r = sdk.SetHeader(r, "X-Count", strconv.Itoa(calls))
	r = sdk.SetHeader(r, "X-Instance", instance)
	// Echo the arguments back. They alias the request buffer, which is fine:
	// the answer is encoded before the host writes the next request.
	r.Arguments = req.Arguments
	return r
}

func init() { sdk.HandleIntercept(intercept) }

func main() {}
