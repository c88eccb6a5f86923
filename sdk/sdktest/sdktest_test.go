package sdktest_test

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/guest"
	"github.com/antler-mcp/antler/sdk"
	"github.com/antler-mcp/antler/sdk/sdktest"
)

func TestExamplePlugin(t *testing.T) { testDenyDelete(t) }

// register swaps in handlers for one test and restores the example's.
func register(t *testing.T, ic sdk.InterceptFunc, rf sdk.ResultFunc) {
	sdk.HandleIntercept(ic)
	sdk.HandleResult(rf)
	t.Cleanup(func() {
		sdk.HandleIntercept(denyDelete)
		sdk.HandleResult(nil)
	})
}

func TestInterceptRoundTripsEveryField(t *testing.T) {
	req := &abi.InterceptRequest{
		Server: "crm", Transport: "http", Tool: "crm_find", OriginalTool: "find",
		Arguments:   []byte(`{"q":"acme"}`),
		Headers:     []abi.Header{{Name: "Authorization", Value: "Bearer x"}, {Name: "X-A", Value: "1"}},
		UserID:      "alice",
		ThreadID:    "t1",
		SecretNames: []string{"region", "tenant"},
		Secrets:     []abi.Header{{Name: "tenant", Value: "t-1"}},
		Config:      []byte(`{"k":"v"}`),
	}
	var seen abi.InterceptRequest
	want := abi.InterceptResponse{
		Action:        abi.ActionContinue,
		SetHeaders:    []abi.Header{{Name: "X-B", Value: "2"}},
		RemoveHeaders: []string{"X-A"},
		Arguments:     []byte(`{"q":"ACME"}`),
	}
	register(t, func(r *sdk.Request) sdk.Response {
		seen = *r
		// The dispatcher reuses its decoded request: keep copies.
		seen.Headers = append([]abi.Header(nil), r.Headers...)
		seen.SecretNames = append([]string(nil), r.SecretNames...)
		seen.Secrets = append([]abi.Header(nil), r.Secrets...)
		seen.Arguments = append([]byte(nil), r.Arguments...)
		seen.Config = append([]byte(nil), r.Config...)
		return want
	}, nil)
	got := sdktest.Intercept(t, req)
	if !reflect.DeepEqual(&seen, req) {
		t.Errorf("the handler saw\n%+v\nwant\n%+v", seen, *req)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("answer %+v, want %+v", got, want)
	}
	// The caller's request is not changed.
	if string(req.Arguments) != `{"q":"acme"}` || len(req.Headers) != 2 {
		t.Errorf("request changed: %+v", req)
	}
}

func TestDenyAndPanic(t *testing.T) {
	register(t, func(r *sdk.Request) sdk.Response {
		if r.Tool == "boom" {
			panic("kaput")
		}
		return sdk.Deny("no")
	}, nil)
	if got := sdktest.Intercept(t, &abi.InterceptRequest{}); got.Action != abi.ActionDeny || got.Message != "no" {
		t.Errorf("deny: %+v", got)
	}
	got := sdktest.Intercept(t, &abi.InterceptRequest{Tool: "boom"})
	if !strings.Contains(got.Error, "plugin panicked: kaput") {
		t.Errorf("panic: %+v, want an Error answer", got)
	}
}

func TestResult(t *testing.T) {
	register(t, nil, func(r *sdk.ResultRequest) sdk.ResultResponse {
		if r.Server != "s" || r.Tool != "s_t" || r.OriginalTool != "t" || r.UserID != "u" || r.ThreadID != "th" || string(r.Config) != `{}` {
			return sdk.ResultResponse{Error: fmt.Sprintf("unexpected request %+v", r)}
		}
		if strings.Contains(string(r.Result), "keep") {
			return sdk.ResultResponse{}
		}
		return sdk.ResultResponse{Result: []byte(`{"content":[{"type":"text","text":"rewritten"}]}`)}
	})
	req := &abi.ResultRequest{Server: "s", Tool: "s_t", OriginalTool: "t", UserID: "u", ThreadID: "th", Config: []byte(`{}`),
		Result: []byte(`{"content":[{"type":"text","text":"original"}]}`)}
	if got := sdktest.Result(t, req); got.Error != "" || string(got.Result) != `{"content":[{"type":"text","text":"rewritten"}]}` {
		t.Errorf("rewrite: %+v", got)
	}
	req.Result = []byte(`{"content":[{"type":"text","text":"keep"}]}`)
	if got := sdktest.Result(t, req); got.Error != "" || got.Result != nil {
		t.Errorf("keep: %+v, want a nil Result", got)
	}
}

// fatalTB records the first Fatal and stops the calling function.
type fatalTB struct {
	testing.TB
	msg string
}

type stop struct{}

func (f *fatalTB) Helper()                   {}
func (f *fatalTB) Fatal(args ...any)         { f.msg = fmt.Sprint(args...); panic(stop{}) }
func (f *fatalTB) Fatalf(s string, a ...any) { f.msg = fmt.Sprintf(s, a...); panic(stop{}) }

func fatalOf(fn func(tb testing.TB)) string {
	tb := &fatalTB{}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (stop{}) {
				panic(r)
			}
		}()
		fn(tb)
	}()
	return tb.msg
}

func TestMissingHandlerFailsTheTest(t *testing.T) {
	register(t, nil, nil)
	if msg := fatalOf(func(tb testing.TB) { sdktest.Intercept(tb, &abi.InterceptRequest{}) }); !strings.Contains(msg, "sdk.HandleIntercept") {
		t.Errorf("no interceptor: %q", msg)
	}
	if msg := fatalOf(func(tb testing.TB) { sdktest.Result(tb, &abi.ResultRequest{}) }); !strings.Contains(msg, "sdk.HandleResult") {
		t.Errorf("no result hook: %q", msg)
	}
}

// TestCallsAreSerialised: a plugin's unlocked globals, safe in a
// single-threaded Wasm instance, do not race under parallel tests.
func TestCallsAreSerialised(t *testing.T) {
	calls := 0
	register(t, func(r *sdk.Request) sdk.Response {
		calls++
		return sdk.Continue()
	}, func(r *sdk.ResultRequest) sdk.ResultResponse {
		calls++
		return sdk.ResultResponse{}
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				sdktest.Intercept(t, &abi.InterceptRequest{Tool: "x"})
				sdktest.Result(t, &abi.ResultRequest{Tool: "x"})
			}
		})
	}
	wg.Wait()
	if calls != 800 {
		t.Errorf("%d calls, want 800", calls)
	}
}

// statusOnly is a task driver without Answer: an ABI 1.0 driver.
type statusOnly struct{}

func (statusOnly) Submit(*abi.TaskSubmitRequest) abi.TaskDriverResponse {
	return abi.TaskDriverResponse{RemoteTaskID: "1"}
}
func (statusOnly) Status(*abi.TaskReference) abi.TaskDriverResponse {
	return abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{Status: abi.StatusWorking}}
}
func (statusOnly) Cancel(*abi.TaskReference) abi.TaskDriverResponse {
	return abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{Status: abi.StatusCancelled}}
}

// answering adds Answer, echoing what it was given.
type answering struct{ statusOnly }

func (answering) Answer(req *abi.TaskAnswerRequest) abi.TaskDriverResponse {
	if req.Action == "panic" {
		panic("boom")
	}
	res := fmt.Sprintf(`{"task":%q,"question":%s,"action":%q,"content":%s,"id":%q}`,
		req.Task.RemoteTaskID, req.Question, req.Action, req.Content, req.AnswerID)
	return abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{Status: abi.StatusCompleted, Result: []byte(res)}}
}

// TestAnswer: a driver with Answer declares FeatureTaskAnswer and gets every
// field of the request; a panic is a retryable error; a driver without it
// declares nothing and the harness says why it cannot be called.
func TestAnswer(t *testing.T) {
	t.Cleanup(func() { sdk.HandleTasks(nil) })
	sdk.HandleTasks(statusOnly{})
	if guest.Features()&abi.FeatureTaskAnswer != 0 {
		t.Error("a driver without Answer declares FeatureTaskAnswer")
	}
	if msg := fatalOf(func(tb testing.TB) { sdktest.Answer(tb, &abi.TaskAnswerRequest{}, nil) }); !strings.Contains(msg, "sdk.TaskAnswerer") {
		t.Errorf("no Answer: %q", msg)
	}
	sdk.HandleTasks(answering{})
	if guest.Features()&(abi.FeatureTaskAnswer|abi.FeatureTaskDriver) != abi.FeatureTaskAnswer|abi.FeatureTaskDriver {
		t.Errorf("features = %#x, want the driver and answer bits", guest.Features())
	}
	resp := sdktest.Answer(t, &abi.TaskAnswerRequest{Task: abi.TaskReference{RemoteTaskID: "7"}, Question: []byte(`{"q":1}`),
		Action: abi.AnswerAccept, Content: []byte(`{"a":2}`), AnswerID: "ans-1"}, nil)
	want := `{"task":"7","question":{"q":1},"action":"accept","content":{"a":2},"id":"ans-1"}`
	if resp.Snapshot == nil || string(resp.Snapshot.Result) != want {
		t.Errorf("answer = %+v, want result %s", resp, want)
	}
	if resp := sdktest.Answer(t, &abi.TaskAnswerRequest{Action: "panic"}, nil); resp.Error == "" || !resp.Retryable {
		t.Errorf("panicking answer = %+v, want a retryable error", resp)
	}
}
