package upstream

import (
	"encoding/json"
	"testing"
)

// TestProgressTokenFound: a request's progress token is found however its
// key is spelled (an escape spells it without its bytes), and a request
// without one is not decoded into one.
func TestProgressTokenFound(t *testing.T) {
	for _, tc := range []struct {
		params       string
		notification bool
		want         string
	}{
		{`{"name":"echo","arguments":{"message":"hi"}}`, false, ""},
		{`{"name":"echo","_meta":{"progressToken":"t1"}}`, false, `"t1"`},
		{`{"name":"echo","_meta":{"progress\u0054oken":7}}`, false, `7`},
		{`{"name":"echo","arguments":{"progressToken":"not meta"}}`, false, ""},
		{`{"name":"echo","_meta":{"progressToken":null}}`, false, ""},
		{`{"progressToken":"n1","progress":1}`, true, `"n1"`},
		{`{"progress\u0054oken":"n2","progress":1}`, true, `"n2"`},
		{`{"progress":1}`, true, ""},
	} {
		_, tok := progressToken(json.RawMessage(tc.params), tc.notification)
		if string(tok) != tc.want {
			t.Errorf("progressToken(%s, %v) = %s, want %s", tc.params, tc.notification, tok, tc.want)
		}
	}
}
