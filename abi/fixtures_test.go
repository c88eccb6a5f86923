package abi_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/abi"
)

// message is what every top-level ABI message implements.
type message interface {
	Encode(*abi.Encoder)
	Decode([]byte) error
}

// kinds lists one constructor per top-level message type.
var kinds = []struct {
	name string
	new  func() message
}{
	{"InterceptRequest", func() message { return new(abi.InterceptRequest) }},
	{"InterceptResponse", func() message { return new(abi.InterceptResponse) }},
	{"ResultRequest", func() message { return new(abi.ResultRequest) }},
	{"ResultResponse", func() message { return new(abi.ResultResponse) }},
	{"TaskSubmitRequest", func() message { return new(abi.TaskSubmitRequest) }},
	{"TaskReference", func() message { return new(abi.TaskReference) }},
	{"TaskDriverResponse", func() message { return new(abi.TaskDriverResponse) }},
	{"TaskAnswerRequest", func() message { return new(abi.TaskAnswerRequest) }},
	{"CallToolRequest", func() message { return new(abi.CallToolRequest) }},
	{"CallToolResponse", func() message { return new(abi.CallToolResponse) }},
}

func encode(m message) []byte {
	var e abi.Encoder
	m.Encode(&e)
	return e.Bytes()
}

// newLike returns a zero message of m's concrete type.
func newLike(m message) message {
	return reflect.New(reflect.TypeOf(m).Elem()).Interface().(message)
}

// Fully populated values: every field set to a non-default value, with
// repeated fields holding several elements. TestFullValuesAreFull keeps them
// full when fields are added.
var (
	fullInterceptRequest = &abi.InterceptRequest{
		Server:       "github",
		Transport:    "streamable-http",
		Tool:         "github__create_issue",
		OriginalTool: "create_issue",
		Arguments:    []byte(`{"title":"bug","body":"ünïcødé ✓"}`),
		Headers: []abi.Header{
			{Name: "Authorization", Value: "Bearer t0k3n"},
			{Name: "X-Trace", Value: "abc"},
			{Name: "X-Empty-Value", Value: ""},
		},
		UserID:      "user-1",
		ThreadID:    "thread-9",
		SecretNames: []string{"GITHUB_TOKEN", "", "NPM_TOKEN"},
		Secrets:     []abi.Header{{Name: "GITHUB_TOKEN", Value: "ghp_x"}},
		Config:      []byte(`{"deny":["delete_repo"]}`),
	}
	fullInterceptResponse = &abi.InterceptResponse{
		Action:        abi.ActionDeny,
		Message:       "not allowed",
		SetHeaders:    []abi.Header{{Name: "X-A", Value: "1"}, {Name: "X-B", Value: "2"}},
		RemoveHeaders: []string{"Cookie", "X-Debug"},
		Arguments:     []byte(`{}`),
		Error:         "plugin exploded",
	}
	fullResultRequest = &abi.ResultRequest{
		Server:       "fs",
		Tool:         "fs__read",
		OriginalTool: "read_file",
		UserID:       "u",
		ThreadID:     "t",
		Result:       []byte(`{"content":[{"type":"text","text":"hi"}]}`),
		Config:       []byte(`{"redact":true}`),
	}
	fullResultResponse = &abi.ResultResponse{
		Result: []byte(`{"content":[]}`),
		Error:  "boom",
	}
	fullTaskSubmitRequest = &abi.TaskSubmitRequest{
		UserID:      "u1",
		ThreadID:    "t1",
		RunID:       "r1",
		ToolCallID:  "call_1",
		ServerName:  "jobs",
		TaskName:    "render",
		Arguments:   []byte(`{"scene":1}`),
		DriverData:  []byte(`{"queue":"gpu"}`),
		LocalTaskID: "local-1",
	}
	fullTaskReference = &abi.TaskReference{
		LocalTaskID:  "local-1",
		UserID:       "u1",
		ThreadID:     "t1",
		ServerName:   "jobs",
		RemoteTaskID: "remote-77",
		DriverData:   []byte(`{"queue":"gpu"}`),
	}
	fullTaskSnapshot = &abi.TaskSnapshot{
		Status:           abi.StatusCompleted,
		Result:           []byte(`{"ok":true}`),
		ResultPreview:    "ok",
		ResultTruncated:  true,
		ResultArtifact:   []abi.Header{{Name: "uri", Value: "s3://b/k"}, {Name: "mime_type", Value: "image/png"}},
		Error:            "partial",
		InputRequired:    []byte(`{"question":"?"}`),
		PollAfterSeconds: 2.5,
		HasPollAfter:     true,
	}
	fullTaskDriverResponse = &abi.TaskDriverResponse{
		RemoteTaskID: "remote-77",
		Snapshot:     fullTaskSnapshot,
		DriverData:   []byte(`{"etag":"x"}`),
		Error:        "transient",
		Retryable:    true,
	}
	fullTaskAnswerRequest = &abi.TaskAnswerRequest{
		Task:     *fullTaskReference,
		Question: []byte(`{"message":"Which colour?","requestedSchema":{"type":"object"}}`),
		Action:   abi.AnswerAccept,
		Content:  []byte(`{"colour":"blue ✓"}`),
		AnswerID: "mcp-answer-0f1e",
	}
	fullCallToolRequest = &abi.CallToolRequest{
		Server:               "github",
		Tool:                 "list_issues",
		Arguments:            []byte(`{"state":"open"}`),
		UserID:               "u",
		ThreadID:             "t",
		RequestScopedHeaders: true,
	}
	fullCallToolResponse = &abi.CallToolResponse{
		Result: []byte(`{"content":[]}`),
		Error:  "upstream down",
	}
)

// roundTripCases are values that must survive Encode then Decode unchanged
// (see equal). Decode yields nil for absent bytes fields and a non-nil
// (possibly empty) slice for present ones.
var roundTripCases = []struct {
	name string
	msg  message
}{
	{"InterceptRequest/full", fullInterceptRequest},
	{"InterceptRequest/empty", &abi.InterceptRequest{}},
	{"InterceptRequest/present-empty", &abi.InterceptRequest{
		Arguments:   []byte{},
		Config:      []byte{},
		Headers:     []abi.Header{{}},
		SecretNames: []string{""},
		Secrets:     []abi.Header{{Name: "K"}},
	}},
	{"InterceptRequest/large", &abi.InterceptRequest{
		Arguments: []byte(`{"blob":"` + strings.Repeat("x", 70000) + `"}`),
		Headers:   []abi.Header{{Name: "X-Big", Value: strings.Repeat("v", 20000)}},
	}},
	{"InterceptResponse/full", fullInterceptResponse},
	{"InterceptResponse/empty", &abi.InterceptResponse{}},
	{"InterceptResponse/max-action", &abi.InterceptResponse{Action: math.MaxUint64, Arguments: []byte{}}},
	{"ResultRequest/full", fullResultRequest},
	{"ResultRequest/empty", &abi.ResultRequest{}},
	{"ResultResponse/full", fullResultResponse},
	{"ResultResponse/empty", &abi.ResultResponse{}},
	{"ResultResponse/present-empty", &abi.ResultResponse{Result: []byte{}}},
	{"TaskSubmitRequest/full", fullTaskSubmitRequest},
	{"TaskSubmitRequest/empty", &abi.TaskSubmitRequest{}},
	{"TaskReference/full", fullTaskReference},
	{"TaskReference/empty", &abi.TaskReference{}},
	{"TaskDriverResponse/full", fullTaskDriverResponse},
	{"TaskDriverResponse/empty", &abi.TaskDriverResponse{}},
	{"TaskDriverResponse/no-snapshot", &abi.TaskDriverResponse{
		RemoteTaskID: "r", DriverData: []byte(`{}`),
	}},
	{"TaskDriverResponse/empty-snapshot", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{}}},
	{"TaskDriverResponse/poll-after-zero", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{
		Status: abi.StatusWorking, HasPollAfter: true,
	}}},
	{"TaskDriverResponse/poll-after-no-value", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{
		Status: abi.StatusSubmitted, Result: []byte{}, InputRequired: []byte{},
	}}},
	{"TaskDriverResponse/poll-after-extremes", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{
		PollAfterSeconds: math.Inf(1), HasPollAfter: true,
	}}},
	{"TaskDriverResponse/poll-after-tiny", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{
		PollAfterSeconds: math.SmallestNonzeroFloat64, HasPollAfter: true,
	}}},
	{"TaskDriverResponse/poll-after-negative", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{
		PollAfterSeconds: -1, HasPollAfter: true,
	}}},
	{"TaskDriverResponse/large-snapshot", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{
		Status: abi.StatusCompleted, Result: []byte(`"` + strings.Repeat("r", 20000) + `"`),
	}}},
	{"TaskAnswerRequest/full", fullTaskAnswerRequest},
	{"TaskAnswerRequest/empty", &abi.TaskAnswerRequest{}},
	{"TaskAnswerRequest/decline", &abi.TaskAnswerRequest{Task: abi.TaskReference{RemoteTaskID: "7"}, Action: abi.AnswerDecline, AnswerID: "a"}},
	{"TaskAnswerRequest/present-empty", &abi.TaskAnswerRequest{Question: []byte{}, Content: []byte{}, Task: abi.TaskReference{DriverData: []byte{}}}},
	{"TaskAnswerRequest/large", &abi.TaskAnswerRequest{Action: abi.AnswerAccept, Content: []byte(`{"text":"` + strings.Repeat("a", 70000) + `"}`)}},
	{"CallToolRequest/full", fullCallToolRequest},
	{"CallToolRequest/empty", &abi.CallToolRequest{}},
	{"CallToolResponse/full", fullCallToolResponse},
	{"CallToolResponse/empty", &abi.CallToolResponse{}},
}

// TestFullValuesAreFull fails when a message gains a field the fully
// populated fixtures do not set, so the round-trip and wire tests keep
// covering every field.
func TestFullValuesAreFull(t *testing.T) {
	for _, v := range []any{
		fullInterceptRequest, fullInterceptResponse, fullResultRequest, fullResultResponse,
		fullTaskSubmitRequest, fullTaskReference, fullTaskSnapshot, fullTaskDriverResponse, fullTaskAnswerRequest,
		fullCallToolRequest, fullCallToolResponse,
	} {
		rv := reflect.ValueOf(v).Elem()
		for i := range rv.NumField() {
			if rv.Field(i).IsZero() {
				t.Errorf("%s.%s is not set in the full fixture", rv.Type().Name(), rv.Type().Field(i).Name)
			}
		}
	}
}

// fill sets the exported fields of the struct v points to at random, with
// the shapes Decode produces: nil or non-nil bytes, nil or non-empty
// repeated fields, PollAfterSeconds only with HasPollAfter.
func fill(r *rand.Rand, v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(randString(r))
		case reflect.Bool:
			f.SetBool(r.IntN(2) == 0)
		case reflect.Uint64:
			switch r.IntN(3) {
			case 0:
				f.SetUint(0)
			case 1:
				f.SetUint(r.Uint64N(300))
			default:
				f.SetUint(r.Uint64())
			}
		case reflect.Float64:
			// set below, with HasPollAfter
		case reflect.Struct: // an embedded message that is always written
			fill(r, f)
		case reflect.Pointer:
			if r.IntN(3) != 0 {
				p := reflect.New(f.Type().Elem())
				fill(r, p.Elem())
				f.Set(p)
			}
		case reflect.Slice:
			switch f.Type().Elem().Kind() {
			case reflect.Uint8:
				switch r.IntN(3) {
				case 0: // absent
				case 1:
					f.SetBytes([]byte{})
				default:
					f.SetBytes([]byte(randString(r) + "x"))
				}
			default:
				n := r.IntN(4)
				if n == 0 {
					continue
				}
				s := reflect.MakeSlice(f.Type(), n, n)
				for j := range n {
					e := s.Index(j)
					if e.Kind() == reflect.String {
						e.SetString(randString(r))
					} else {
						fill(r, e)
					}
				}
				f.Set(s)
			}
		default:
			panic("fill: unhandled kind " + f.Kind().String())
		}
	}
	if snap, ok := v.Addr().Interface().(*abi.TaskSnapshot); ok && snap.HasPollAfter {
		switch r.IntN(4) {
		case 0:
			snap.PollAfterSeconds = 0
		case 1:
			snap.PollAfterSeconds = math.Inf(2*r.IntN(2) - 1)
		default:
			snap.PollAfterSeconds = (r.Float64() - 0.2) * 1e6
		}
	}
}

func randString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return ""
	}
	b := make([]byte, r.IntN(200)+1)
	for i := range b {
		b[i] = byte(r.UintN(256)) // not necessarily UTF-8: the codec is byte-exact
	}
	return string(b)
}

// equal compares two messages as the ABI defines them: bytes fields by
// presence (nil or not) and content, repeated fields by their elements (a
// nil and an empty slice are both "no elements": Decode may reuse a value's
// capacity), everything else exactly.
func equal(a, b any) bool {
	return equalValue(reflect.ValueOf(a), reflect.ValueOf(b))
}

func equalValue(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalValue(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.Type().Elem().Kind() == reflect.Uint8 {
			return a.IsNil() == b.IsNil() && bytes.Equal(a.Bytes(), b.Bytes())
		}
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float()) || a.Float() == b.Float()
	default:
		return a.Equal(b)
	}
}

// show formats a message for a failure, eliding long values.
func show(m any) string {
	s := fmt.Sprintf("%+v", m)
	if p, ok := m.(*abi.TaskDriverResponse); ok && p != nil && p.Snapshot != nil {
		s += fmt.Sprintf(" Snapshot=%+v", *p.Snapshot)
	}
	if len(s) > 600 {
		s = s[:300] + fmt.Sprintf(" …(%d bytes)… ", len(s)-600) + s[len(s)-300:]
	}
	return s
}

func TestEqual(t *testing.T) {
	cases := []struct {
		a, b any
		want bool
	}{
		{&abi.InterceptRequest{}, &abi.InterceptRequest{Headers: []abi.Header{}, SecretNames: []string{}}, true},
		{&abi.InterceptRequest{}, &abi.InterceptRequest{Arguments: []byte{}}, false},
		{&abi.InterceptRequest{Arguments: []byte("a")}, &abi.InterceptRequest{Arguments: []byte("b")}, false},
		{&abi.InterceptRequest{SecretNames: []string{""}}, &abi.InterceptRequest{}, false},
		{&abi.TaskDriverResponse{}, &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{}}, false},
		{&abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{HasPollAfter: true}}, &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{}}, false},
		{fullTaskDriverResponse, &abi.TaskDriverResponse{
			RemoteTaskID: fullTaskDriverResponse.RemoteTaskID, Snapshot: fullTaskSnapshot,
			DriverData: fullTaskDriverResponse.DriverData, Error: fullTaskDriverResponse.Error, Retryable: true,
		}, true},
	}
	for i, c := range cases {
		if got := equal(c.a, c.b); got != c.want {
			t.Errorf("#%d: equal = %v, want %v", i, got, c.want)
		}
	}
}
