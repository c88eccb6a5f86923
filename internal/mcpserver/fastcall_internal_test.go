package mcpserver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestPlainID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{`"a"`, true}, {`""`, true}, {`1`, true}, {`0`, true}, {`-7`, true}, {` 42 `, true},
		{`123456789012345`, true}, {`1234567890123456`, false},
		{`1.5`, false}, {`1e3`, false}, {`01`, false}, {`-`, false}, {`null`, false}, {`{}`, false}, {``, false},
	} {
		if got := plainID(json.RawMessage(tc.id)); got != tc.want {
			t.Errorf("plainID(%s) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// TestPassThroughProbe: a result passes through as its bytes only with
// content of known types, named as plain strings, and no input requests or
// request state (null counts as there); anything else takes the decoding
// path (or rewriteResult, for a resultType or _meta).
func TestPassThroughProbe(t *testing.T) {
	s := &Server{}
	for _, tc := range []struct {
		name, raw string
		through   bool // the bytes themselves are the answer
	}{
		{"text", `{"content":[{"type":"text","text":"hi"}]}`, true},
		{"two known", `{"content":[{"type":"image","data":"x","mimeType":"image/png"},{"type":"resource_link","uri":"a://b","name":"b"}]}`, true},
		{"empty content", `{"content":[]}`, true},
		{"unknown type", `{"content":[{"type":"hologram"}]}`, false},
		{"escaped type", `{"content":[{"type":"te\u0078t","text":"hi"}]}`, false},
		{"number type", `{"content":[{"type":7}]}`, false},
		{"no type", `{"content":[{"text":"hi"}]}`, false},
		{"null block", `{"content":[null]}`, false},
		{"block not an object", `{"content":["text"]}`, false},
		{"no content", `{"isError":true}`, false},
		{"null content", `{"content":null}`, false},
		{"input requests", `{"content":[],"inputRequests":{}}`, false},
		{"null input requests", `{"content":[],"inputRequests":null}`, false},
		{"request state", `{"content":[],"requestState":"s"}`, false},
		{"incomplete", `{"content":[],"resultType":"input_required"}`, false},
		{"not an object", `[1]`, false},
		{"spaced", "{ \"content\" : [ { \"text\" : \"hi\" , \"type\" : \"text\" } ] }", true},
		{"content twice", `{"content":[],"content":null}`, false},
		{"type twice", `{"content":[{"type":"text","type":"hologram"}]}`, false},
		{"content in another case", `{"Content":[{"type":"text"}]}`, false},
		{"input requests in another case", `{"content":[],"InputRequests":{}}`, false},
		{"type in another case", `{"content":[{"TYPE":"text"}]}`, false},
		{"a key folding to requestState", "{\"content\":[],\"reque\u017ftState\":\"s\"}", false},
		{"invalid JSON", `{"content":[{"type":"text"}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := s.passThrough(json.RawMessage(tc.raw), false)
			if ok != tc.through || ok && string(got) != tc.raw {
				t.Errorf("passThrough(%s) = %s, %v; want the bytes: %v", tc.raw, got, ok, tc.through)
			}
		})
	}
	// A _meta, null included, is rewritten (the upstream's serverInfo
	// dropped), the other members' bytes kept.
	got, ok := s.passThrough(json.RawMessage(`{"content":[{"type":"text","text":"hi"}],"_meta":null}`), false)
	if !ok || string(got) != `{"content":[{"type":"text","text":"hi"}]}` {
		t.Errorf("null _meta: %s, %v", got, ok)
	}
}

// passThroughByDecoding is passThrough's probe as encoding/json reads the
// result (what it was before it read the members as written): whether the
// bytes may pass and whether they must be rewritten.
func passThroughByDecoding(raw []byte) (through, rewrite bool) {
	var probe struct {
		Content []struct {
			Type json.RawMessage `json:"type"`
		} `json:"content"`
		ResultType    json.RawMessage `json:"resultType"`
		InputRequests member          `json:"inputRequests"`
		RequestState  member          `json:"requestState"`
		Meta          member          `json:"_meta"`
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' || json.Unmarshal(raw, &probe) != nil || probe.Content == nil ||
		bool(probe.InputRequests) || bool(probe.RequestState) ||
		probe.ResultType != nil && string(probe.ResultType) != `"complete"` {
		return false, false
	}
	for _, c := range probe.Content {
		b := c.Type
		if !(len(b) > 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 && knownContent[string(b[1:len(b)-1])]) {
			return false, false
		}
	}
	return true, probe.ResultType != nil || bool(probe.Meta)
}

// member records that a member is there, null included.
type member bool

func (m *member) UnmarshalJSON([]byte) error { *m = true; return nil }

// FuzzPassThroughProbe: a result the door passes through as its bytes is
// one encoding/json would also let through, and its bytes (with the
// revision's prefix) are the upstream's.
func FuzzPassThroughProbe(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"image","data":"x"},{"type":"resource_link","uri":"a://b"}],"isError":false}`,
		`{"content":[],"_meta":{"a":1}}`,
		`{"content":[],"resultType":"complete"}`,
		`{"Content":[{"type":"text"}]}`,
		`{"content":[{"type":"text","Type":"x"}]}`,
		`{"content":[],"inputRequests":null}`,
		`{"content":[],"_meta":null}`,
		"{\"content\":[],\"reque\u017ftState\":1}",
	} {
		f.Add(seed)
	}
	s := &Server{modernPrefix: []byte(`{"resultType":"complete",`)}
	f.Fuzz(func(t *testing.T, raw string) {
		want, rewrite := passThroughByDecoding([]byte(raw))
		for _, modern := range []bool{false, true} {
			got, ok := s.passThrough(json.RawMessage(raw), modern)
			if !ok {
				continue
			}
			if !want {
				t.Fatalf("%q passed (modern %v) as %s; encoding/json reads it as not relayable as bytes", raw, modern, got)
			}
			if rewrite {
				continue // rewriteResult's own output
			}
			trimmed := bytes.TrimSpace([]byte(raw))
			if !modern && !bytes.Equal(got, trimmed) || modern && !bytes.Equal(got, append([]byte(`{"resultType":"complete",`), trimmed[1:]...)) {
				t.Fatalf("%q passed (modern %v) as %s", raw, modern, got)
			}
		}
	})
}

// FuzzReadCallMessage: a message the door reads as written is read as
// encoding/json reads it.
func FuzzReadCallMessage(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo_echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":null,"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"r"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":1},"requestState":"s","inputResponses":{}}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"t\u006fols/call","params":{"name":"x"}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return
		}
		var got callMessage
		if !readCallMessage([]byte(body), &got) {
			return
		}
		var want callMessage
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("%s read as %+v; encoding/json: %v", body, got, err)
		}
		var members struct {
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal([]byte(body), &members); !bytes.Equal(got.params, members.Params) {
			t.Fatalf("%s: params read as %s; encoding/json reads %s", body, got.params, members.Params)
		}
		got.params = nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s read as %+v; encoding/json reads %+v", body, got, want)
		}
	})
}

// TestReadCallMessage: the usual messages are read as written; a member
// named twice or in another case, an escaped string or params that are
// not an object are left to encoding/json.
func TestReadCallMessage(t *testing.T) {
	for _, tc := range []struct {
		body string
		read bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo_echo","arguments":{"message":"hi"}}}`, true},
		{` { "method" : "tools/call" , "params" : { "arguments" : { } , "name" : "a" } , "id" : "x" , "jsonrpc" : "2.0" , "extra" : [1] } `, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p"}}}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0078"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"naïve"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, false},
		{`{"jsonrpc":2,"id":1,"method":"tools/call","params":{"name":"x"}}`, false},
		{`[1]`, false},
	} {
		var msg callMessage
		if got := readCallMessage([]byte(tc.body), &msg); got != tc.read {
			t.Errorf("readCallMessage(%s) = %v, want %v", tc.body, got, tc.read)
		}
		if tc.read && (msg.JSONRPC != "2.0" || msg.Method == "") {
			t.Errorf("readCallMessage(%s) read %+v", tc.body, msg)
		}
	}
	var msg callMessage
	readCallMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo_echo","arguments":{"message":"hi"}}}`), &msg)
	if msg.Params.Name != "demo_echo" || string(msg.Params.Arguments) != `{"message":"hi"}` || string(msg.ID) != "1" {
		t.Errorf("read %+v", msg)
	}
}
