// Command hostile is a test guest that misbehaves on request: the tool name
// picks the misbehaviour (loop, bomb, panic, goroutine-panic, exit, fs, hold). Every answer carries X-Count, the number of calls
// this instance has served, so tests can tell a fresh instance from a reused
// one.
package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk"
)

var (
	calls int
	sink  [][]byte // the allocation bomb keeps everything reachable
	spin  uint64
)

func intercept(req *sdk.Request) sdk.Response {
	calls++
	switch req.Tool {
	case "loop":
		for {
			spin++
		}
	case "bomb":
		for {
			sink = append(sink, make([]byte, 1<<20))
		}
	case "panic":
		panic("hostile guest panicked on purpose")
	case "goroutine-panic":
		// A panic on another goroutine escapes the SDK's recover and
		// kills the whole guest.
		done := make(chan struct{})
		go func() {
			defer close(done)
			panic("hostile guest panicked on a goroutine")
		}()
		<-done
	case "exit":
		os.Exit(3)
	case "fs":
		return filesystem()
	case "hold":
		// Grow the instance by 24 MiB, then wait in a host call (the test's
		// CallTool blocks until it lets go).
		sink = append(sink, make([]byte, 24<<20))
		resp := sdk.CallTool(&abi.CallToolRequest{Server: "test", Tool: "block"})
		return sdk.SetHeader(sdk.Continue(), "X-Held", string(resp.Result))
	}
	return sdk.SetHeader(sdk.Continue(), "X-Count", strconv.Itoa(calls))
}

// filesystem tries to read host files and reports what happened: the
// content if it got any (it must not), else the error text.
func filesystem() sdk.Response {
	r := sdk.Continue()
	if b, err := os.ReadFile("/etc/passwd"); err != nil {
		r = sdk.SetHeader(r, "X-Passwd-Error", err.Error())
	} else {
		r = sdk.SetHeader(r, "X-Passwd", string(b))
	}
	if entries, err := os.ReadDir("/"); err != nil {
		r = sdk.SetHeader(r, "X-Root-Error", err.Error())
	} else {
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		r = sdk.SetHeader(r, "X-Root", strings.Join(names, ","))
	}
	if f, err := os.Create("/tmp/antler-hostile-guest"); err != nil {
		r = sdk.SetHeader(r, "X-Create-Error", err.Error())
	} else {
		f.Close()
		r = sdk.SetHeader(r, "X-Create", "created")
	}
	if wd, err := os.Getwd(); err == nil {
		r = sdk.SetHeader(r, "X-Wd", wd)
	}
	r = sdk.SetHeader(r, "X-Env", strings.Join(os.Environ(), ","))
	return r
}

func init() { sdk.HandleIntercept(intercept) }

func main() {}
