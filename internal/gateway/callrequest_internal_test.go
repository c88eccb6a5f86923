package gateway

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzScanCallFields: a body the scanner reads parses as it does decoded:
// the same request, or an error for both (its seeds run with the ordinary
// tests).
func FuzzScanCallFields(f *testing.F) {
	for _, seed := range []string{`{}`, ` { } `, `{"arguments":{"message":"hi"}}`, `{"arguments":{"a":[1,{"b":"}"}],"c":"\"{"}}`,
		`{"arguments":{"a":1},"thread_id":"t1","secrets":{"k":"v"},"user_id":"u"}`, "{\n\t\"arguments\" : { } ,\r\n\"thread_id\" : null }",
		`{"arguments":null}`, `{"arguments":1}`, `{"arguments":"{"}`, `{"arguments":{"a":1},"arguments":{"b":2}}`, `{"arguments":[],"arguments":{}}`,
		`{"thread_id":"../x"}`, `{"thread_id":"t\u0031"}`, `{"thread_id":"é"}`, `{"thread_id":1}`, `{"user_id":true}`, `{"secrets":{"k":1}}`,
		`{"secrets":[]}`, `{"x":1}`, `{"argument\u0073":{}}`, `{"Arguments":{}}`, `{"arguments":{}} trailing`, `{"arguments":{}}{}`, `[]`, `null`, `"s"`, `{`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, ok := scanCallFields(body); !ok {
			return
		}
		got, gotErr := ParseCallRequest(body)
		want, wantErr := parseDecoded(CallRequest{Arguments: json.RawMessage("{}")}, body)
		// (Which error: with two bad fields the decoded map's order picks.)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, decoded %v", body, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %+v, decoded %+v", body, got, want)
		}
	})
}
