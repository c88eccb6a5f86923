package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/plugins/plugintest"
	"github.com/antler-mcp/antler/sdk/sdktest"
)

const redactConfig = `{"patterns": ["sk-[A-Za-z0-9]+", "AKIA[0-9A-Z]{16}"]}`

// call runs a result through the hook in-process (sdktest) and through its
// real Wasm build, fails unless both answer the same bytes, and returns the
// answer; failed reports an Error answer (the host fails the call closed).
func call(t *testing.T, p *plugins.Plugin, result string) (resp abi.ResultResponse, failed bool) {
	t.Helper()
	req := abi.ResultRequest{Server: "http", Tool: "http_echo", OriginalTool: "echo", UserID: "alice", Result: []byte(result), Config: p.Entry.Config}
	in := sdktest.Result(t, &req)
	out, err := p.OnResult(context.Background(), req.UserID, &req)
	if (in.Error != "") != (err != nil) {
		t.Fatalf("in-process error %q, Wasm error %v", in.Error, err)
	}
	if err == nil && (!bytes.Equal(in.Result, out.Result) || (in.Result == nil) != (out.Result == nil)) {
		t.Fatalf("in-process %s, Wasm %s", in.Result, out.Result)
	}
	return in, in.Error != ""
}

func load(t *testing.T, config string) *plugins.Plugin {
	var raw json.RawMessage
	if config != "" {
		raw = json.RawMessage(config)
	}
	return plugintest.Load(t, ".", plugins.Entry{Name: "redactor", Config: raw})
}

// sameJSON compares two JSON documents by value.
func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("the result %s is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}

func TestRedact(t *testing.T) {
	p := load(t, redactConfig)
	for _, tc := range []struct {
		name, result string
		want         string // "" keeps the result
	}{
		{"text", `{"content":[{"type":"text","text":"Echo: sk-abc123"}]}`,
			`{"content":[{"type":"text","text":"Echo: [REDACTED]"}]}`},
		{"every match, every pattern, every item",
			`{"content":[{"type":"text","text":"a sk-1 b sk-Two AKIA0123456789ABCDEF"},{"type":"image","data":"sk-notText","mimeType":"image/png"},{"type":"text","text":"clean"}],"isError":true}`,
			`{"content":[{"type":"text","text":"a [REDACTED] b [REDACTED] [REDACTED]"},{"type":"image","data":"sk-notText","mimeType":"image/png"},{"type":"text","text":"clean"}],"isError":true}`},
		{"embedded resource text",
			`{"content":[{"type":"resource","resource":{"uri":"file:///k","text":"key=sk-abc"}}]}`,
			`{"content":[{"type":"resource","resource":{"uri":"file:///k","text":"key=[REDACTED]"}}]}`},
		{"structuredContent at any depth, numbers kept exactly",
			`{"content":[{"type":"text","text":"ok <b>"}],"structuredContent":{"headers":{"authorization":"Bearer sk-abc123"},"list":["sk-1",{"deep":["AKIA0123456789ABCDEF"]}],"n":12345678901234567890,"f":1.50,"b":true,"z":null},"_meta":{"k":"sk-outOfScope"}}`,
			`{"content":[{"type":"text","text":"ok <b>"}],"structuredContent":{"headers":{"authorization":"Bearer [REDACTED]"},"list":["[REDACTED]",{"deep":["[REDACTED]"]}],"n":12345678901234567890,"f":1.50,"b":true,"z":null},"_meta":{"k":"sk-outOfScope"}}`},
		{"structuredContent a bare string", `{"content":[],"structuredContent":"sk-x"}`, `{"content":[],"structuredContent":"[REDACTED]"}`},
		{"nothing to redact", `{"content":[{"type":"text","text":"Echo: hi"}],"structuredContent":{"sum":3}}`, ""},
		{"match only outside the redacted fields", `{"content":[],"_meta":{"k":"sk-1"}}`, ""},
		{"empty result object", `{}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, failed := call(t, p, tc.result)
			switch {
			case failed:
				t.Fatalf("failed: %q", resp.Error)
			case tc.want == "":
				if resp.Result != nil {
					t.Errorf("rewrote %s into %s, want it kept", tc.result, resp.Result)
				}
			case !sameJSON(t, resp.Result, tc.want):
				t.Errorf("got  %s\nwant %s", resp.Result, tc.want)
			case !strings.Contains(string(resp.Result), "<b>") && strings.Contains(tc.want, "<b>"):
				t.Errorf("HTML-escaped: %s", resp.Result)
			case strings.Contains(tc.want, "12345678901234567890") &&
				(!strings.Contains(string(resp.Result), `"n":12345678901234567890`) || !strings.Contains(string(resp.Result), `"f":1.50`)):
				t.Errorf("numbers not kept verbatim: %s", resp.Result)
			}
			// Still a CallToolResult: an object whose content is a list.
			if resp.Result != nil {
				var res struct {
					Content []json.RawMessage `json:"content"`
				}
				if err := json.Unmarshal(resp.Result, &res); err != nil {
					t.Errorf("not a CallToolResult: %v", err)
				}
			}
		})
	}
}

func TestReplacement(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{"patterns": ["sk-[a-z0-9]+"], "replacement": "***"}`, "key *** end"},
		{`{"patterns": ["(sk)-[a-z0-9]+"], "replacement": "$1-?"}`, "key $1-? end"}, // literal, not a group
		{`{"patterns": ["sk-[a-z0-9]+"], "replacement": ""}`, "key  end"},
		{`{"patterns": ["sk-[a-z0-9]+"]}`, "key [REDACTED] end"},
	} {
		p := load(t, tc.config)
		resp, failed := call(t, p, `{"content":[{"type":"text","text":"key sk-abc123 end"}]}`)
		if failed || !sameJSON(t, resp.Result, `{"content":[{"type":"text","text":`+mustJSON(tc.want)+`}]}`) {
			t.Errorf("config %s: %+v %s", tc.config, resp, resp.Result)
		}
	}
}

func mustJSON(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestNoPatternsKeepsEverything(t *testing.T) {
	for _, config := range []string{"", `{}`, `{"patterns": []}`} {
		p := load(t, config)
		if resp, failed := call(t, p, `{"content":[{"type":"text","text":"sk-abc"}]}`); failed || resp.Result != nil {
			t.Errorf("config %q: %+v", config, resp)
		}
	}
}

// A redactor that cannot do its job fails the call closed.
func TestFailsClosed(t *testing.T) {
	for _, tc := range []struct{ config, result, want string }{
		{`{"patterns": ["("]}`, `{"content":[]}`, "patterns[0]: error parsing regexp"},
		{`{"patterns": ["ok", ""]}`, `{"content":[]}`, "patterns[1]: must not be empty"},
		{`{"patterns": "sk-"}`, `{"content":[]}`, "config:"},
		{redactConfig, `[{"type":"text","text":"sk-1"}]`, "not a JSON object"},
		{redactConfig, `null`, "not a JSON object"},
		{redactConfig, `{"content":[{"type":"text","text":"sk-1"}]`, "not a JSON object"},
	} {
		p := load(t, tc.config)
		resp, failed := call(t, p, tc.result)
		if !failed || !strings.Contains(resp.Error, tc.want) {
			t.Errorf("config %s, result %s: %+v, want an error containing %q", tc.config, tc.result, resp, tc.want)
		}
	}
}

func TestCompiledOncePerConfig(t *testing.T) {
	clear(redactors)
	a := compiled([]byte(redactConfig))
	if b := compiled([]byte(redactConfig)); a != b {
		t.Error("the same config was compiled twice")
	}
	for i := range 3 * maxRedactors {
		compiled([]byte(strings.Repeat(" ", i) + `{}`))
	}
	if len(redactors) > maxRedactors {
		t.Errorf("%d cached configs, want at most %d", len(redactors), maxRedactors)
	}
}
