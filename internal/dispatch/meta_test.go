package dispatch

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestMetaForwarding checks what _meta a request carries upstream: the
// door's own keys, never its "headers" (on stdio that key is the chain's
// credentials), plus the chain's headers on stdio only.
func TestMetaForwarding(t *testing.T) {
	forged := map[string]any{"progressToken": "p1", "headers": map[string]string{"Authorization": "forged"}}
	chain := map[string]string{"Authorization": "Bearer real"}
	tests := []struct {
		name       string
		downstream map[string]any
		stdio      bool
		headers    map[string]string
		params     string
		want       string // the params sent, "" for wireMeta's nil
	}{
		{"nothing to add", nil, false, nil, `{"uri":"a"}`, `{"uri":"a"}`},
		{"http keeps the door's keys, drops its headers", forged, false, chain, `{"uri":"a"}`, `{"_meta":{"progressToken":"p1"},"uri":"a"}`},
		{"stdio carries the chain's headers", forged, true, chain, `{"uri":"a"}`, `{"_meta":{"headers":{"Authorization":"Bearer real"},"progressToken":"p1"},"uri":"a"}`},
		{"params' own headers are dropped", nil, false, nil, `{"_meta":{"headers":{"X":"1"},"k":2}}`, `{"_meta":{"k":2}}`},
		{"no params", map[string]any{"progressToken": 7}, false, nil, ``, `{"_meta":{"progressToken":7}}`},
		{"params not an object", map[string]any{"progressToken": 7}, false, nil, `[1]`, `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withMeta(json.RawMessage(tt.params), wireMeta(tt.downstream, tt.stdio, tt.headers))
			if string(got) != tt.want {
				t.Errorf("params = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestWireMetaCopiesOnlyToChange: the door's _meta passes as it is when
// nothing is dropped or added (no copy per call), and is never written:
// dropping its "headers" or adding the chain's makes a new map.
func TestWireMetaCopiesOnlyToChange(t *testing.T) {
	same := func(a, b map[string]any) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	plain := map[string]any{"io.modelcontextprotocol/logLevel": "info"}
	if got := wireMeta(plain, true, nil); !same(got, plain) {
		t.Errorf("a plain _meta was copied: %v", got)
	}
	forged := map[string]any{"progressToken": "p1", "headers": map[string]string{"Authorization": "forged"}}
	if got := wireMeta(forged, false, nil); same(got, forged) || len(forged) != 2 || got["headers"] != nil {
		t.Errorf("forged headers: got %v, the door's map now %v", got, forged)
	}
	if got := wireMeta(plain, true, map[string]string{"Authorization": "Bearer real"}); same(got, plain) || len(plain) != 1 || got["headers"] == nil {
		t.Errorf("chain headers: got %v, the door's map now %v", got, plain)
	}
}
