// Package sdk is what a plugin author imports to write an Antler interceptor
// or task driver in Go: one function per hook, registered in init. The same
// code runs as a sandboxed Wasm module (GOOS=wasip1, -buildmode=c-shared,
// see wasm.go) or in-process under the test harness in sdk/sdktest.
//
//	func init() {
//		sdk.HandleIntercept(func(req *sdk.Request) sdk.Response {
//			return sdk.Continue().SetHeader("X-Tenant", "acme")
//		})
//	}
//
//	func main() {}
//
// Plugins must not carry state between calls: the host may serve several
// users from one instance (unless the plugin is configured isolate: per_user).
package sdk

import (
	"fmt"

	"github.com/antler-mcp/antler/abi"
)

// Request is a tool call as an interceptor sees it.
type Request = abi.InterceptRequest

// Response is an interceptor's answer.
type Response = abi.InterceptResponse

// ResultRequest is a tool result on its way back to the agent.
type ResultRequest = abi.ResultRequest

// ResultResponse rewrites (or keeps) a result.
type ResultResponse = abi.ResultResponse

// InterceptFunc handles one call.
type InterceptFunc func(req *Request) Response

// ResultFunc handles one result.
type ResultFunc func(req *ResultRequest) ResultResponse

// TaskDriver implements a durable task protocol over upstream tools (see
// abi/README.md, "Task drivers"). It reaches the upstream only through
// CallTool, which the host scopes to the task's server, user and thread;
// what it must remember about a task goes in driver_data (a JSON object of
// strings the host persists), never in the guest. An answer with Error and
// Retryable is retried; Error alone fails the task.
type TaskDriver interface {
	Submit(req *abi.TaskSubmitRequest) abi.TaskDriverResponse
	Status(ref *abi.TaskReference) abi.TaskDriverResponse
	Cancel(ref *abi.TaskReference) abi.TaskDriverResponse
}

// TaskAnswerer is a TaskDriver that also takes users' answers to its tasks'
// input_required questions (ABI 1.1). A driver registered with HandleTasks
// that implements it declares abi.FeatureTaskAnswer; one that does not has
// tasks that cannot be answered. Answer delivers req's answer to the remote
// task and answers the task's snapshot afterwards, as Status does; it must
// pass req.AnswerID on as the remote's idempotency key, since the host may
// deliver one answer more than once. An answer with Error and no Retryable
// refuses the answer for good (the user is asked again).
type TaskAnswerer interface {
	Answer(req *abi.TaskAnswerRequest) abi.TaskDriverResponse
}

// handlers is the guest's registry: a guest module is one process with one
// thread, and registration happens in init.
var handlers struct {
	intercept InterceptFunc
	result    ResultFunc
	tasks     TaskDriver
}

// HandleIntercept registers the interceptor.
func HandleIntercept(f InterceptFunc) { handlers.intercept = f }

// HandleResult registers the result hook.
func HandleResult(f ResultFunc) { handlers.result = f }

// HandleTasks registers a task driver.
func HandleTasks(d TaskDriver) { handlers.tasks = d }

// Features reports the entry points the registered handlers serve.
func Features() uint64 {
	var f uint64
	if handlers.intercept != nil {
		f |= abi.FeatureIntercept
	}
	if handlers.result != nil {
		f |= abi.FeatureResultHook
	}
	if handlers.tasks != nil {
		f |= abi.FeatureTaskDriver
	}
	if _, ok := handlers.tasks.(TaskAnswerer); ok {
		f |= abi.FeatureTaskAnswer
	}
	// The log and call-tool bits are not claimed: the Go linker drops the
	// imports a plugin never calls, and the module's import list says which
	// it kept.
	return f
}

// Continue forwards the call unchanged.
func Continue() Response { return Response{Action: abi.ActionContinue} }

// Deny refuses the call; message is shown to the model, so it must not
// contain a secret.
func Deny(message string) Response { return Response{Action: abi.ActionDeny, Message: message} }

// SetHeader returns r with one more header write.
func SetHeader(r Response, name, value string) Response {
	r.SetHeaders = append(r.SetHeaders, abi.Header{Name: name, Value: value})
	return r
}

// Secret returns a granted secret's value ("" when absent or not granted).
func Secret(req *Request, name string) string {
	for _, s := range req.Secrets {
		if s.Name == name {
			return s.Value
		}
	}
	return ""
}

// HeaderValue returns a request header, case-insensitively.
func HeaderValue(req *Request, name string) string {
	for _, h := range req.Headers {
		if equalFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
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
	var out Response
	switch {
	case handlers.intercept == nil:
		out = Response{Error: "this plugin has no interceptor"}
	case d.req.Decode(in) != nil:
		out = Response{Error: "malformed request"}
	default:
		out = guard(func() Response { return handlers.intercept(&d.req) }, func(msg string) Response { return Response{Error: msg} })
	}
	out.Encode(&d.enc)
	return d.enc.Bytes()
}

// Result decodes a ResultRequest, runs the hook and encodes its answer.
func (d *Dispatcher) Result(in []byte) []byte {
	d.enc.Reset()
	var out ResultResponse
	switch {
	case handlers.result == nil:
		out = ResultResponse{Error: "this plugin has no result hook"}
	case d.res.Decode(in) != nil:
		out = ResultResponse{Error: "malformed request"}
	default:
		out = guard(func() ResultResponse { return handlers.result(&d.res) }, func(msg string) ResultResponse { return ResultResponse{Error: msg} })
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
	case handlers.tasks == nil:
		out = fail("this plugin has no task driver")
	case op == "submit":
		var req abi.TaskSubmitRequest
		if req.Decode(in) != nil {
			out = fail("malformed request")
			break
		}
		out = guard(func() abi.TaskDriverResponse { return handlers.tasks.Submit(&req) }, fail)
	case op == "answer":
		ans, ok := handlers.tasks.(TaskAnswerer)
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
			out = guard(func() abi.TaskDriverResponse { return handlers.tasks.Cancel(&ref) }, fail)
		} else {
			out = guard(func() abi.TaskDriverResponse { return handlers.tasks.Status(&ref) }, fail)
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
