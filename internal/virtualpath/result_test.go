package virtualpath_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

// decode parses JSON keeping numbers exact.
func decode(t *testing.T, raw []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %s: %v", raw, err)
	}
	return v
}

func TestRewriteResult(t *testing.T) {
	tests := []struct {
		name    string
		files   []string // created under the workspace
		changed []string // host paths relative to the thread dir; {OUT} allowed
		in      string   // {WS} = host workspace, {OUT} = outside folder
		want    string   // {V} = virtual workspace; "" = byte-identical
	}{
		{
			name:    "all item kinds",
			files:   []string{"a.txt", "b.png", "c.md", "new.csv"},
			changed: []string{"{WS}/new.csv", "{OUT}/elsewhere.txt"},
			in: `{
				"content": [
					{"type": "text", "text": "Wrote {WS}/a.txt.", "annotations": {"priority": 0.5}},
					{"type": "resource_link", "uri": "file://{WS}/b.png", "name": "b", "mimeType": "image/png"},
					{"type": "resource", "resource": {"uri": "file://{WS}/c.md", "mimeType": "text/markdown", "text": "see {WS}/a.txt"}},
					{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png", "note": "{WS}/a.txt"},
					{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
				],
				"structuredContent": {"path": "{WS}/a.txt", "n": 12345678901234567890},
				"isError": false,
				"x-unknown": {"keep": [1, 2, 3]},
				"_meta": {"existing": {"k": "v"}, "n": 1}
			}`,
			want: `{
				"content": [
					{"type": "text", "text": "Wrote {V}/a.txt.", "annotations": {"priority": 0.5}},
					{"type": "resource_link", "uri": "{V}/b.png", "name": "b", "mimeType": "image/png"},
					{"type": "resource", "resource": {"uri": "{V}/c.md", "mimeType": "text/markdown", "text": "see {V}/a.txt"}},
					{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png", "note": "{WS}/a.txt"},
					{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
				],
				"structuredContent": {"path": "{V}/a.txt", "n": 12345678901234567890},
				"isError": false,
				"x-unknown": {"keep": [1, 2, 3]},
				"_meta": {"existing": {"k": "v"}, "n": 1, "antler/changed_files": ["{V}/new.csv"]}
			}`,
		},
		{
			name:    "bare changed name in text",
			files:   []string{"out/report.md"},
			changed: []string{"{WS}/out/report.md"},
			in:      `{"content":[{"type":"text","text":"Saved report.md."}]}`,
			want:    `{"content":[{"type":"text","text":"Saved {V}/out/report.md."}],"_meta":{"antler/changed_files":["{V}/out/report.md"]}}`,
		},
		{
			name:  "unknown fields of a rewritten item keep exact numbers",
			files: []string{"a.txt"},
			in:    `{"content":[{"type":"text","text":"{WS}/a.txt","x-big":12345678901234567890,"x-f":1.0000000000000000001}]}`,
			want:  `{"content":[{"type":"text","text":"{V}/a.txt","x-big":12345678901234567890,"x-f":1.0000000000000000001}]}`,
		},
		{
			name:  "embedded resource with blob untouched",
			files: []string{"a.bin", "a.txt"},
			in:    `{"content":[{"type":"resource","resource":{"uri":"file:///nowhere/x","blob":"AAAA"}},{"type":"text","text":"{WS}/a.txt"}]}`,
			want:  `{"content":[{"type":"resource","resource":{"uri":"file:///nowhere/x","blob":"AAAA"}},{"type":"text","text":"{V}/a.txt"}]}`,
		},
		{
			name:    "changed files only",
			files:   []string{"new.csv"},
			changed: []string{"{WS}/new.csv"},
			in:      `{"content":[{"type":"text","text":"done"}]}`,
			want:    `{"content":[{"type":"text","text":"done"}],"_meta":{"antler/changed_files":["{V}/new.csv"]}}`,
		},
		{
			name:    "null _meta with changed files",
			files:   []string{"new.csv"},
			changed: []string{"{WS}/new.csv"},
			in:      `{"content":[],"_meta":null}`,
			want:    `{"content":[],"_meta":{"antler/changed_files":["{V}/new.csv"]}}`,
		},
		{
			name:    "content not an array",
			files:   []string{"new.csv"},
			changed: []string{"{WS}/new.csv"},
			in:      `{"content":"{WS}/new.csv"}`,
			want:    `{"content":"{WS}/new.csv","_meta":{"antler/changed_files":["{V}/new.csv"]}}`,
		},
		{
			name:    "nothing to rewrite is byte-identical",
			files:   []string{"a.txt"},
			changed: []string{"{OUT}/elsewhere.txt", "{OUT}/missing.txt"},
			in: "{\"z\":1,  \"content\" : [ {\"type\":\"text\",\"text\":\"no paths <here> & {OUT}/missing.txt\"},\n" +
				"{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"} ],\"structuredContent\":{\"a\":1.50},\"_meta\":{}}",
		},
		{
			name:    "structuredContent paths at any depth, never bare names",
			files:   []string{"d/a.txt", "report.md"},
			changed: []string{"{WS}/report.md"},
			in:      `{"content":[],"structuredContent":{"content":"{WS}/d/a.txt\n{WS}/d","hits":[{"path":"{WS}/new/x.md","n":1.50}],"name":"report.md","{WS}/k":true}}`,
			want:    `{"content":[],"structuredContent":{"content":"{V}/d/a.txt\n{V}/d","hits":[{"path":"{V}/new/x.md","n":1.50}],"name":"report.md","{WS}/k":true},"_meta":{"antler/changed_files":["{V}/report.md"]}}`,
		},
		{
			name:  "isError result text",
			files: []string{"a.txt"},
			in:    `{"content":[{"type":"text","text":"Error: ENOENT: no such file or directory, open '{WS}/missing.txt'"}],"isError":true}`,
			want:  `{"content":[{"type":"text","text":"Error: ENOENT: no such file or directory, open '{V}/missing.txt'"}],"isError":true}`,
		},
		{
			name:  "path spelled with JSON escapes only",
			files: []string{"a.txt"},
			in:    `{"content":[{"type":"text","text":"{WSU}\u002fa.txt"}]}`,
			want:  `{"content":[{"type":"text","text":"{V}/a.txt"}]}`,
		},
		{name: "no slash, no changed files", in: `{"content":[{"type":"text","text":"Echo: benchmark"}]}`},
		{name: "empty object", in: `{}`},
		{name: "null result", files: []string{"new.csv"}, changed: []string{"{WS}/new.csv"}, in: `null`},
		{name: "array result", files: []string{"new.csv"}, changed: []string{"{WS}/new.csv"}, in: `[1,2]`},
		{name: "invalid JSON", files: []string{"new.csv"}, changed: []string{"{WS}/new.csv"}, in: `{"content":`},
		{name: "malformed items", files: []string{"a.txt"},
			in: `{"content":[1,"x",null,{"type":"text","text":7},{"type":"resource","resource":"{WS}/a.txt"},{"type":"resource_link"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, f := range tc.files {
				write(t, filepath.Join(e.ws, filepath.FromSlash(f)), "x")
			}
			write(t, filepath.Join(e.outside, "elsewhere.txt"), "x")
			r := strings.NewReplacer("{WSU}", strings.ReplaceAll(e.ws, "/", `\u002f`), "{WS}", e.ws, "{OUT}", e.outside, "{V}", virtualpath.Prefix+"/workspace")
			var changed []string
			for _, c := range tc.changed {
				changed = append(changed, r.Replace(c))
			}
			in := []byte(r.Replace(tc.in))
			tr := virtualpath.NewTranslator(e.root, "", changed)
			got := virtualpath.RewriteResult(in, tr, changed)
			if tc.want == "" {
				if !bytes.Equal(got, in) {
					t.Fatalf("result changed:\n got %s\nwant %s", got, in)
				}
				return
			}
			want := []byte(r.Replace(tc.want))
			if g, w := decode(t, got), decode(t, want); !reflect.DeepEqual(g, w) {
				t.Fatalf("RewriteResult\n got %s\nwant %s", got, want)
			}
		})
	}
}
