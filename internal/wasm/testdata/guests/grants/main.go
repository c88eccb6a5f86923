// Command grants is a test guest that reports the clock and randomness it
// sees: the current year, a monotonic reading and random bytes from
// crypto/rand and math/rand/v2.
package main

import (
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"strconv"
	"time"

	"github.com/antler-mcp/antler/sdk"
)

var start = time.Now()

func intercept(req *sdk.Request) sdk.Response {
	var b [16]byte
	_, _ = rand.Read(b[:])
	r := sdk.Continue()
	r = sdk.SetHeader(r, "X-Year", strconv.Itoa(time.Now().Year()))
	r = sdk.SetHeader(r, "X-Unix", strconv.FormatInt(time.Now().Unix(), 10))
	r = sdk.SetHeader(r, "X-Since-Init", time.Since(start).String())
	r = sdk.SetHeader(r, "X-Crypto-Rand", hex.EncodeToString(b[:]))
	r = sdk.SetHeader(r, "X-Math-Rand", strconv.FormatUint(mrand.Uint64(), 16))
	return r
}

func init() { sdk.HandleIntercept(intercept) }

func main() {}
