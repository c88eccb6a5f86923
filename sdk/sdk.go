// Package sdk is what a plugin author imports to write an Antler interceptor
// or task driver in Go: one function per hook, registered in init. The same
// code runs as a sandboxed Wasm module (GOOS=wasip1, -buildmode=c-shared),
// as a separate process (sdk/sdkplugin), or in-process under the test
// harness in sdk/sdktest, which also captures what the plugin logs and plays
// the host for CallTool:
//
//	func init() {
//		sdk.HandleIntercept(func(req *sdk.Request) sdk.Response {
//			tenant := sdk.Secret(req, "tenant")
//			if tenant == "" {
//				return sdk.Deny("This tool needs your tenant token.")
//			}
//			sdk.Log(sdk.LevelInfo, "tenant header set for "+req.Tool)
//			return sdk.SetHeader(sdk.Continue(), "X-Tenant", tenant)
//		})
//	}
//
//	func main() {}
//
// (the package's Example runs this code). Plugins must not carry state
// between calls: the host may serve several users from one instance (unless
// the plugin is configured isolate: per_user).
package sdk

import (
	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/guest"
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

// HandleIntercept registers the interceptor.
func HandleIntercept(f InterceptFunc) { guest.Handlers.Intercept = f }

// HandleResult registers the result hook.
func HandleResult(f ResultFunc) { guest.Handlers.Result = f }

// HandleTasks registers a task driver.
func HandleTasks(d TaskDriver) { guest.Handlers.Tasks = d }

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

// Level is a log line's level.
type Level int32

// The log levels the host knows (abi/README.md, the log import).
const (
	LevelDebug Level = 0
	LevelInfo  Level = 1
	LevelWarn  Level = 2
	LevelError Level = 3
)

// String names the level ("info"); an unknown one is "level N".
func (l Level) String() string { return guest.LevelName(int32(l)) }

// Log writes a line to the host's log, tagged with the plugin's name (the
// host cuts it at 4 KiB). Never log a secret. Outside Wasm the line goes to
// sdktest's capture in a test (sdktest.CaptureLog), else to standard error.
func Log(level Level, msg string) {
	if msg == "" {
		return
	}
	hostLog(int32(level), msg)
}

// CallTool asks the host to call an upstream tool (task drivers only; the
// host keeps owning transports and credentials, and refuses a server the
// task is not bound to). Outside Wasm it is served by the process host
// (sdk/sdkplugin) or, in a test, by the function the test gave sdktest.
func CallTool(req *abi.CallToolRequest) abi.CallToolResponse { return callTool(req) }
