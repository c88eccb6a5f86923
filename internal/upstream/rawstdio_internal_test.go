package upstream

import (
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
)

// TestScanReply: which stdout lines rawLines reads as the reply to one of
// Antler's requests, and what it reads from them: the usual line without
// decoding; any other spelling as mcp-go's decoding reads it (keys in any
// case, the last of a repeated key, an id spelled with escapes); never a
// message with a method, an id that is not a string, or a line that is not
// JSON.
func TestScanReply(t *testing.T) {
	tests := []struct {
		name            string
		line            string
		ok              bool
		id, result, err string
	}{
		{"result", `{"jsonrpc":"2.0","id":"antler-1","result":{"content":[]}}`, true, `"antler-1"`, `{"content":[]}`, ""},
		{"spaced", ` { "id" : "antler-1" , "result" : [1, 2] } `, true, `"antler-1"`, `[1, 2]`, ""},
		{"error", `{"jsonrpc":"2.0","id":"antler-2","error":{"code":-32601,"message":"no"}}`, true, `"antler-2"`, "", `{"code":-32601,"message":"no"}`},
		{"null result", `{"id":"antler-3","result":null}`, true, `"antler-3"`, "", ""},
		{"key case", `{"ID":"antler-4","Result":{"a":1}}`, true, `"antler-4"`, `{"a":1}`, ""},
		{"repeated id", `{"id":"antler-5","id":"antler-6","result":1}`, true, `"antler-6"`, `1`, ""},
		{"escaped id", `{"id":"antler\u002d7","result":1}`, true, `"antler-7"`, `1`, ""},
		{"escaped key", `{"\u0069d":"antler-8","result":1}`, true, `"antler-8"`, `1`, ""},
		{"extra member", `{"id":"antler-9","result":1,"x":2}`, true, `"antler-9"`, `1`, ""},
		{"request", `{"jsonrpc":"2.0","id":"antler-1","method":"sampling/createMessage","params":{}}`, false, "", "", ""},
		{"number id", `{"id":1,"result":{}}`, false, "", "", ""},
		{"not JSON", `{"id":"antler-1","result":{`, false, "", "", ""},
		{"array", `[{"id":"antler-1"}]`, false, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := scanReply([]byte(tc.line))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if string(m.id) != tc.id || string(m.result) != tc.result || string(m.err) != tc.err {
				t.Errorf("id %s result %s error %s; want %s, %s, %s", m.id, m.result, m.err, tc.id, tc.result, tc.err)
			}
		})
	}
}

// TestRawLinesTake: a reply line reaches the request waiting for its id,
// however the server spelled the id, and once; any other line, or a reply
// nobody waits for, is left to mcp-go.
func TestRawLinesTake(t *testing.T) {
	tests := []struct {
		name, line string
		taken      bool
	}{
		{"plain", `{"jsonrpc":"2.0","id":"antler-1","result":{"ok":true}}` + "\n", true},
		{"escaped id", `{"jsonrpc":"2.0","id":"\u0061ntler-1","result":{"ok":true}}` + "\r\n", true},
		{"another id", `{"jsonrpc":"2.0","id":"antler-2","result":{}}` + "\n", false},
		{"mcp-go's", `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n", false},
		{"a request", `{"jsonrpc":"2.0","id":"antler-1","method":"ping"}` + "\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newRawLines(nil, nil)
			ch := make(chan *transport.JSONRPCResponse, 1)
			l.waiters[`"antler-1"`] = ch
			if got := l.take([]byte(tc.line)); got != tc.taken {
				t.Fatalf("taken %v, want %v", got, tc.taken)
			}
			if !tc.taken {
				return
			}
			if r := <-ch; string(r.Result) != `{"ok":true}` || r.Error != nil {
				t.Errorf("reply %s %v", r.Result, r.Error)
			}
			if l.take([]byte(tc.line)) {
				t.Error("a second reply for the id was taken")
			}
		})
	}
}
