package mcpserver

import (
	"encoding/json"
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
