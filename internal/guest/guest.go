// Package guest is the plugin side of the plugin ABI that every way of
// running a Go plugin shares: the registry the sdk's Handle functions fill
// in init, the Features word derived from it, and the Dispatcher that turns
// encoded requests into encoded answers. The Wasm exports (sdk, under
// GOOS=wasip1), the process server (sdk/sdkplugin) and the in-process test
// harness (sdk/sdktest) all go through it, so a plugin behaves the same
// under each. None of it is for plugin authors, which is why it is internal:
// authors import sdk.
package guest

import (
	"fmt"

	"github.com/antler-mcp/antler/abi"
)

// TaskDriver is the task-driver hooks a plugin registers (sdk.TaskDriver
// has the same method set, so any sdk.TaskDriver is one).
type TaskDriver interface {
	Submit(req *abi.TaskSubmitRequest) abi.TaskDriverResponse
	Status(ref *abi.TaskReference) abi.TaskDriverResponse
	Cancel(ref *abi.TaskReference) abi.TaskDriverResponse
}

// TaskAnswerer is a TaskDriver that takes answers (sdk.TaskAnswerer has
// the same method set).
type TaskAnswerer interface {
	Answer(req *abi.TaskAnswerRequest) abi.TaskDriverResponse
}

// Handlers is the guest's registry: a guest module is one process with one
// thread, and registration happens in init. A nil field is a hook the plugin
// does not serve.
var Handlers struct {
	Intercept func(req *abi.InterceptRequest) abi.InterceptResponse
	Result    func(req *abi.ResultRequest) abi.ResultResponse
	Tasks     TaskDriver
}

// Features reports the entry points the registered handlers serve.
func Features() uint64 {
	var f uint64
	if Handlers.Intercept != nil {
		f |= abi.FeatureIntercept
	}
	if Handlers.Result != nil {
		f |= abi.FeatureResultHook
	}
	if Handlers.Tasks != nil {
		f |= abi.FeatureTaskDriver
	}
	if _, ok := Handlers.Tasks.(TaskAnswerer); ok {
		f |= abi.FeatureTaskAnswer
	}
	// The log and call-tool bits are not claimed: the Go linker drops the
	// imports a plugin never calls, and the module's import list says which
	// it kept.
	return f
}

// Dispatcher turns encoded requests into encoded responses with the
// registered handlers. It reuses its buffers: a returned slice is valid until
// the next call. The Wasm exports, the process server and the test harness
// all go through it, so a plugin behaves the same under each.
type Dispatcher struct {
	enc abi.Encoder
	req abi.InterceptRequest
	res abi.ResultRequest
}

// Intercept decodes an InterceptRequest, runs the handler and encodes its answer.
func (d *Dispatcher) Intercept(in []byte) []byte {
	d.enc.Reset()
	var out abi.InterceptResponse
	switch {
	case Handlers.Intercept == nil:
		out = abi.InterceptResponse{Error: "this plugin has no interceptor"}
	case d.req.Decode(in) != nil:
		out = abi.InterceptResponse{Error: "malformed request"}
	default:
		out = guard(func() abi.InterceptResponse { return Handlers.Intercept(&d.req) }, func(msg string) abi.InterceptResponse { return abi.InterceptResponse{Error: msg} })
	}
	out.Encode(&d.enc)
	return d.enc.Bytes()
}

// Result decodes a ResultRequest, runs the hook and encodes its answer.
func (d *Dispatcher) Result(in []byte) []byte {
	d.enc.Reset()
	var out abi.ResultResponse
	switch {
	case Handlers.Result == nil:
		out = abi.ResultResponse{Error: "this plugin has no result hook"}
	case d.res.Decode(in) != nil:
		out = abi.ResultResponse{Error: "malformed request"}
	default:
		out = guard(func() abi.ResultResponse { return Handlers.Result(&d.res) }, func(msg string) abi.ResultResponse { return abi.ResultResponse{Error: msg} })
	}
	out.Encode(&d.enc)
	return d.enc.Bytes()
}

// Task runs one task-driver entry point ("submit", "status", "cancel" or
// "answer").
func (d *Dispatcher) Task(op string, in []byte) []byte {
	d.enc.Reset()
	// A driver that panics or gets a request it cannot read is broken, not
	// the task: the host retries the call instead of failing the task.
	fail := func(msg string) abi.TaskDriverResponse { return abi.TaskDriverResponse{Error: msg, Retryable: true} }
	var out abi.TaskDriverResponse
	switch {
	case Handlers.Tasks == nil:
		out = fail("this plugin has no task driver")
	case op == "submit":
		var req abi.TaskSubmitRequest
		if req.Decode(in) != nil {
			out = fail("malformed request")
			break
		}
		out = guard(func() abi.TaskDriverResponse { return Handlers.Tasks.Submit(&req) }, fail)
	case op == "answer":
		ans, ok := Handlers.Tasks.(TaskAnswerer)
		var req abi.TaskAnswerRequest
		switch {
		case !ok:
			out = abi.TaskDriverResponse{Error: "this task driver does not take answers"}
		case req.Decode(in) != nil:
			out = fail("malformed request")
		default:
			out = guard(func() abi.TaskDriverResponse { return ans.Answer(&req) }, fail)
		}
	default:
		var ref abi.TaskReference
		if ref.Decode(in) != nil {
			out = fail("malformed request")
			break
		}
		if op == "cancel" {
			out = guard(func() abi.TaskDriverResponse { return Handlers.Tasks.Cancel(&ref) }, fail)
		} else {
			out = guard(func() abi.TaskDriverResponse { return Handlers.Tasks.Status(&ref) }, fail)
		}
	}
	out.Encode(&d.enc)
	return d.enc.Bytes()
}

// guard turns a handler panic into an error answer, so a buggy plugin fails
// its call closed instead of taking its instance down.
func guard[T any](f func() T, fail func(string) T) (out T) {
	defer func() {
		if r := recover(); r != nil {
			out = fail(fmt.Sprintf("plugin panicked: %v", r))
		}
	}()
	return f()
}
