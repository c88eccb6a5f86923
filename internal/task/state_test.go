package task_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/antler-mcp/antler/internal/task"
)

func ptr[T any](v T) *T { return &v }

func TestStateValidate(t *testing.T) {
	tests := []struct {
		name string
		s    task.State
		want string // "" = valid
	}{
		{"working", task.State{Status: task.StatusWorking}, ""},
		{"unknown status", task.State{Status: "running"}, `unknown MCP task status "running": want one of submitted, working, input_required, completed, failed, cancelled`},
		{"empty status", task.State{}, `unknown MCP task status "": want one of submitted, working, input_required, completed, failed, cancelled`},
		{"poll hint kept", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(12.5)}, ""},
		{"poll hint tiny", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(1e-9)}, ""},
		{"poll hint NaN", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(math.NaN())}, "poll_after_seconds must be a finite positive number"},
		{"poll hint +Inf", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(math.Inf(1))}, "poll_after_seconds must be a finite positive number"},
		{"poll hint -Inf", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(math.Inf(-1))}, "poll_after_seconds must be a finite positive number"},
		{"poll hint zero", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(0.0)}, "poll_after_seconds must be a finite positive number"},
		{"poll hint negative", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(-1.0)}, "poll_after_seconds must be a finite positive number"},
		{"input required with payload", task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage(`{"question":"Which year?"}`)}, ""},
		{"input required without payload", task.State{Status: task.StatusInputRequired}, "input_required status requires an input_required payload"},
		{"input required with null payload", task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage(" null ")}, "input_required status requires an input_required payload"},
		{"input required payload not an object", task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage(`["q"]`)}, "input_required must be a JSON object"},
		{"payload on another status", task.State{Status: task.StatusWorking, InputRequired: json.RawMessage(`{}`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			// Normalize refuses the same snapshot as a permanent failure.
			_, nerr := task.Normalize(tt.s, task.DefaultConfig())
			if !task.IsPermanent(nerr) || nerr.Error() != tt.want {
				t.Fatalf("Normalize error = %v, want a ProtocolError %q", nerr, tt.want)
			}
		})
	}
}

// artifactOfSize returns an artifact whose compact JSON is exactly n bytes.
func artifactOfSize(n int) map[string]string {
	const overhead = len(`{"mime_type":"text/html","uri":""}`)
	// '<' and '&' count one byte each: nothing is HTML-escaped.
	return map[string]string{"mime_type": "text/html", "uri": strings.Repeat("<&", (n-overhead)/2) + strings.Repeat("x", (n-overhead)%2)}
}

// objectOfSize returns a JSON object of exactly n bytes.
func objectOfSize(n int) json.RawMessage {
	const overhead = len(`{"q":""}`)
	return json.RawMessage(`{"q":"` + strings.Repeat("a", n-overhead) + `"}`)
}

func TestNormalizeErrors(t *testing.T) {
	cfg := task.DefaultConfig()
	tests := []struct {
		name string
		s    task.State
		want string
	}{
		{"artifact one over", task.State{Status: task.StatusCompleted, ResultArtifact: artifactOfSize(65537)},
			"MCP task result_artifact payload exceeds the 65536-byte limit"},
		{"input required one over", task.State{Status: task.StatusInputRequired, InputRequired: objectOfSize(65537)},
			"MCP task input_required payload exceeds the 65536-byte limit"},
		{"input required NaN", task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage(`{"x":NaN}`)},
			"MCP task input_required is not valid JSON: invalid character 'N' looking for beginning of value"},
		{"input required Infinity", task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage(`{"x":Infinity}`)},
			"MCP task input_required is not valid JSON: invalid character 'I' looking for beginning of value"},
		{"input required truncated", task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage(`{"x":`)},
			"MCP task input_required is not valid JSON: unexpected end of JSON input"},
		{"input required bad UTF-8", task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage("{\"x\":\"\xff\"}")},
			"MCP task input_required is not valid JSON: invalid UTF-8"},
		{"result NaN", task.State{Status: task.StatusCompleted, Result: json.RawMessage(`NaN`)},
			"MCP task result is not valid JSON: invalid character 'N' looking for beginning of value"},
		{"result -Infinity", task.State{Status: task.StatusCompleted, Result: json.RawMessage(`[-Infinity]`)},
			"MCP task result is not valid JSON: invalid character 'I' in numeric literal"},
		{"result two values", task.State{Status: task.StatusCompleted, Result: json.RawMessage(`{} {}`)},
			"MCP task result is not valid JSON: invalid character '{' after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := task.Normalize(tt.s, cfg)
			if !task.IsPermanent(err) {
				t.Fatalf("error = %v, want a ProtocolError", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("error = %q, want %q", err.Error(), tt.want)
			}
		})
	}
}

func TestNormalizeAtLimits(t *testing.T) {
	cfg := task.DefaultConfig()
	art := artifactOfSize(65536)
	in := objectOfSize(65536)
	got, err := task.Normalize(task.State{Status: task.StatusInputRequired, ResultArtifact: art, InputRequired: in}, cfg)
	if err != nil {
		t.Fatalf("payloads at the limit refused: %v", err)
	}
	if got.ResultArtifact["uri"] != art["uri"] || string(got.InputRequired) != string(in) {
		t.Fatal("payloads at the limit changed")
	}
}

func TestNormalizeErrorText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"short", "boom", "boom"},
		{"at limit", strings.Repeat("a", 4000), strings.Repeat("a", 4000)},
		{"one over", strings.Repeat("a", 4001), strings.Repeat("a", 4000)},
		{"two-byte runes", strings.Repeat("é", 4001), strings.Repeat("é", 4000)},
		{"emoji on the boundary", strings.Repeat("a", 3999) + "😀b", strings.Repeat("a", 3999) + "😀"},
		{"invalid UTF-8 replaced", "bad \xff byte", "bad \uFFFD byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := task.Normalize(task.State{Status: task.StatusFailed, Error: tt.in}, task.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if got.Error != tt.want {
				t.Fatalf("Error = %.40q… (%d chars), want %d chars", got.Error, utf8.RuneCountInString(got.Error), utf8.RuneCountInString(tt.want))
			}
			if !utf8.ValidString(got.Error) {
				t.Fatal("Error is not valid UTF-8")
			}
		})
	}
}

func TestNormalizeResult(t *testing.T) {
	cfg := task.DefaultConfig()
	cfg.MaxResultBytes = 1024
	cfg.ResultPreviewMaxChars = 64
	str := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("é", n) + `"`) }
	artifact := map[string]string{"uri": "s3://r/1", "mime_type": "application/pdf"}

	tests := []struct {
		name          string
		result        json.RawMessage
		preview       *string
		wantResult    string // "" = nil
		wantPreview   *string
		wantTruncated bool
	}{
		{name: "absent", result: nil},
		{name: "null", result: json.RawMessage(" null ")},
		{name: "compacted", result: json.RawMessage(`{ "a" : [1, 2] , "h": "<b>" }`), wantResult: `{"a":[1,2],"h":"<b>"}`},
		{name: "string at limit", result: str(511), wantResult: string(str(511))}, // 2 + 511×2 = 1024 bytes
		{name: "string one over", result: json.RawMessage(`"` + strings.Repeat("é", 511) + `x"`),
			wantPreview: ptr(strings.Repeat("é", 64)), wantTruncated: true},
		{name: "short string over", result: json.RawMessage(`"` + strings.Repeat("\\n", 600) + `"`),
			wantPreview: ptr(strings.Repeat("\n", 64)), wantTruncated: true},
		{name: "object over", result: json.RawMessage(`{"rows":[` + strings.Repeat(`1,`, 600) + `1]}`),
			wantPreview: ptr(`{"rows":[` + strings.Repeat(`1,`, 27) + `1`), wantTruncated: true},
		{name: "driver preview bounded", result: nil, preview: ptr(strings.Repeat("p", 100)), wantPreview: ptr(strings.Repeat("p", 64))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := task.State{Status: task.StatusCompleted, Result: tt.result, ResultPreview: tt.preview, ResultArtifact: artifact}
			got, err := task.Normalize(in, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantResult == "" && got.Result != nil {
				t.Fatalf("Result = %s, want nil", got.Result)
			}
			if tt.wantResult != "" && string(got.Result) != tt.wantResult {
				t.Fatalf("Result = %s, want %s", got.Result, tt.wantResult)
			}
			if (got.ResultPreview == nil) != (tt.wantPreview == nil) ||
				(got.ResultPreview != nil && *got.ResultPreview != *tt.wantPreview) {
				t.Fatalf("ResultPreview = %v, want %v", deref(got.ResultPreview), deref(tt.wantPreview))
			}
			if got.ResultTruncated != tt.wantTruncated {
				t.Fatalf("ResultTruncated = %v", got.ResultTruncated)
			}
			if got.ResultArtifact["uri"] != "s3://r/1" {
				t.Fatal("artifact not kept")
			}
		})
	}
}

func TestNormalizeDefaultPreviewLength(t *testing.T) {
	cfg := task.DefaultConfig()
	big := json.RawMessage(`"` + strings.Repeat("r", cfg.MaxResultBytes) + `"`)
	got, err := task.Normalize(task.State{Status: task.StatusCompleted, Result: big}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Result != nil || !got.ResultTruncated || got.ResultPreview == nil || len(*got.ResultPreview) != 2000 {
		t.Fatalf("got result=%d bytes truncated=%v preview=%d", len(got.Result), got.ResultTruncated, len(deref(got.ResultPreview)))
	}
}

func TestNormalizeCopies(t *testing.T) {
	in := task.State{
		Status:           task.StatusInputRequired,
		Result:           json.RawMessage(`{"a":1}`),
		ResultArtifact:   map[string]string{"uri": "u", "mime_type": "m"},
		InputRequired:    json.RawMessage(`{"q":"?"}`),
		PollAfterSeconds: ptr(3.0),
	}
	out, err := task.Normalize(in, task.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	in.Result[1] = 'X'
	in.InputRequired[1] = 'X'
	in.ResultArtifact["uri"] = "changed"
	*in.PollAfterSeconds = 99
	if string(out.Result) != `{"a":1}` || string(out.InputRequired) != `{"q":"?"}` ||
		out.ResultArtifact["uri"] != "u" || *out.PollAfterSeconds != 3 {
		t.Fatalf("Normalize output aliases its input: %+v", out)
	}
}

func TestFailedState(t *testing.T) {
	s := task.FailedState(strings.Repeat("x", 5000))
	if s.Status != task.StatusFailed || len(s.Error) != task.MaxErrorChars {
		t.Fatalf("FailedState = %s, %d chars", s.Status, len(s.Error))
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 4, "hell"},
		{"héllo", 2, "hé"},
		{"日本語", 1, "日"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"", 3, ""},
	}
	for _, tt := range tests {
		if got := task.Truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
