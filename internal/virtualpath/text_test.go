package virtualpath_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

func TestText(t *testing.T) {
	// Placeholders in the input: {WS} is the host workspace folder, {OUT} a
	// folder outside the user-data root. {V} in the output is the virtual
	// workspace prefix "/mnt/user-data/workspace".
	tests := []struct {
		name  string
		files []string // created under the workspace
		cwd   bool     // use the workspace as the server cwd
		in    string
		want  string // "" means unchanged
	}{
		{name: "sentence keeps final period", files: []string{"a.txt"},
			in: "Wrote {WS}/a.txt.", want: "Wrote {V}/a.txt."},
		{name: "path alone", files: []string{"a.txt"},
			in: "{WS}/a.txt", want: "{V}/a.txt"},
		{name: "nested", files: []string{"d/e/f.json"},
			in: "see {WS}/d/e/f.json now", want: "see {V}/d/e/f.json now"},
		{name: "parentheses", files: []string{"a.txt"},
			in: "(output in {WS}/a.txt)", want: "(output in {V}/a.txt)"},
		{name: "parenthesis and period", files: []string{"a.txt"},
			in: "Done (see {WS}/a.txt).", want: "Done (see {V}/a.txt)."},
		{name: "double quotes", files: []string{"a.txt"},
			in: `path="{WS}/a.txt"`, want: `path="{V}/a.txt"`},
		{name: "single quotes", files: []string{"a.txt"},
			in: `open('{WS}/a.txt')`, want: `open('{V}/a.txt')`},
		{name: "backticks", files: []string{"a.txt"},
			in: "Saved to `{WS}/a.txt`.", want: "Saved to `{V}/a.txt`."},
		{name: "brackets braces angles", files: []string{"a.txt"},
			in: "[{WS}/a.txt] {{WS}/a.txt} <{WS}/a.txt>", want: "[{V}/a.txt] {{V}/a.txt} <{V}/a.txt>"},
		{name: "all trailing punctuation", files: []string{"a.txt"},
			in: "{WS}/a.txt.,;:!?)]}>\"'`", want: "{V}/a.txt.,;:!?)]}>\"'`"},
		{name: "ellipsis", files: []string{"a.txt"},
			in: "{WS}/a.txt...", want: "{V}/a.txt..."},
		{name: "comma list", files: []string{"a.txt", "b.txt"},
			in: "{WS}/a.txt, {WS}/b.txt; {WS}/missing.txt", want: "{V}/a.txt, {V}/b.txt; {V}/missing.txt"},
		{name: "markdown link", files: []string{"a.txt"},
			in: "[report]({WS}/a.txt)", want: "[report]({V}/a.txt)"},
		{name: "file URI in text", files: []string{"a.txt"},
			in: "at file://{WS}/a.txt!", want: "at {V}/a.txt!"},
		{name: "percent-encoded file URI in text", files: []string{"my file.txt"},
			in: "at file://{WS}/my%20file.txt.", want: "at {V}/my file.txt."},
		{name: "same path twice", files: []string{"a.txt"},
			in: "{WS}/a.txt and again {WS}/a.txt", want: "{V}/a.txt and again {V}/a.txt"},
		{name: "multiline", files: []string{"a.txt"},
			in: "line1\n{WS}/a.txt\nline3", want: "line1\n{V}/a.txt\nline3"},
		{name: "tab separated", files: []string{"a.txt"},
			in: "x\t{WS}/a.txt\ty", want: "x\t{V}/a.txt\ty"},
		{name: "no-break space after path", files: []string{"a.txt"},
			in: "{WS}/a.txt\u00a0saved", want: "{V}/a.txt\u00a0saved"},
		{name: "unicode path", files: []string{"报告/总结.md"},
			in: "已保存 {WS}/报告/总结.md.", want: "已保存 {V}/报告/总结.md."},
		{name: "relative with cwd", files: []string{"sub/a.txt"}, cwd: true,
			in: "Wrote sub/a.txt.", want: "Wrote {V}/sub/a.txt."},
		{name: "dot relative with cwd", files: []string{"a.txt"}, cwd: true,
			in: "Wrote ./a.txt", want: "Wrote {V}/a.txt"},
		{name: "unicode relative with cwd", files: []string{"données/a.txt"}, cwd: true,
			in: "Wrote données/a.txt.", want: "Wrote {V}/données/a.txt."},
		{name: "relative without cwd untouched", files: []string{"sub/a.txt"},
			in: "Wrote sub/a.txt."},
		{name: "missing file", files: []string{"a.txt"},
			in: "Wrote {WS}/nope.txt.", want: "Wrote {V}/nope.txt."},
		{name: "error text naming a missing file", files: []string{"a.txt"},
			in: "Error: ENOENT: no such file or directory, open '{WS}/gone/x.txt'", want: "Error: ENOENT: no such file or directory, open '{V}/gone/x.txt'"},
		{name: "error text naming an allowed directory",
			in: "Access denied - path outside allowed directories: {OUT}/a.txt not in {WS}", want: "Access denied - path outside allowed directories: {OUT}/a.txt not in {V}"},
		{name: "directory keeps its trailing separator", files: []string{"d/a.txt"},
			in: "Listed {WS}/d and {WS}/d/.", want: "Listed {V}/d and {V}/d/."},
		{name: "relative directory with cwd", files: []string{"d/a.txt"}, cwd: true,
			in: "[DIR] d/ and d/a.txt", want: "[DIR] d/ and {V}/d/a.txt"},
		{name: "relative words with a slash untouched", files: []string{"a.txt"}, cwd: true,
			in: "3/4 of tests pass, and/or km/h, ./.. ../.."},
		{name: "missing outside untouched", files: []string{"a.txt"},
			in: "Wrote {OUT}/nope.txt."},
		{name: "outside untouched", files: []string{"a.txt"},
			in: "Wrote {OUT}/a.txt."},
		{name: "path with line number", files: []string{"a.txt"},
			in: "error at {WS}/a.txt:12:3", want: "error at {V}/a.txt:12:3"},
		{name: "no paths", files: []string{"a.txt"},
			in: "Nothing to see here: 3/4 of tests pass, a.txt too."},
		{name: "empty", in: ""},
		{name: "slashes only", in: "/ // /// ./ ../ a/ .../"},
		{name: "https URL untouched", files: []string{"a.txt"},
			in: "Fetched https://example.com/x and http://example.com/a.txt."},
		{name: "https URL ending in the host path untouched", files: []string{"a.txt"},
			in: "https://example.com{WS}/a.txt"},
		{name: "root-relative URL path untouched", files: []string{"a.txt"},
			in: "GET /api/v1/items?x=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, f := range tc.files {
				write(t, filepath.Join(e.ws, filepath.FromSlash(f)), "x")
			}
			write(t, filepath.Join(e.outside, "a.txt"), "x")
			cwd := ""
			if tc.cwd {
				cwd = e.ws
			}
			r := strings.NewReplacer("{WS}", e.ws, "{OUT}", e.outside, "{V}", virtualpath.Prefix+"/workspace")
			in, want := r.Replace(tc.in), r.Replace(tc.want)
			if tc.want == "" {
				want = in
			}
			tr := virtualpath.NewTranslator(e.root, cwd, nil)
			if got := tr.Text(in); got != want {
				t.Fatalf("Text(%q)\n got %q\nwant %q", in, got, want)
			}
			// Memoized second call gives the same answer.
			if got := tr.Text(in); got != want {
				t.Fatalf("second Text(%q)\n got %q\nwant %q", in, got, want)
			}
		})
	}
}

// Oversized or path-heavy text is left alone where nothing resolves and never
// panics.
func TestTextLarge(t *testing.T) {
	e := newEnv(t)
	write(t, filepath.Join(e.ws, "a.txt"), "x")
	tr := virtualpath.NewTranslator(e.root, e.ws, nil)
	long := "/" + strings.Repeat("x", 10000) + " " + strings.Repeat("a/", 5000)
	if got := tr.Text(long); got != long {
		t.Fatal("long text changed")
	}
	many := strings.Repeat(e.ws+"/a.txt ", 2000)
	want := strings.Repeat(virtualpath.Prefix+"/workspace/a.txt ", 2000)
	if got := tr.Text(many); got != want {
		t.Fatal("repeated path not rewritten everywhere")
	}
}

func TestBareNames(t *testing.T) {
	const V = virtualpath.Prefix + "/workspace/"
	tests := []struct {
		name    string
		files   []string // created under the workspace
		changed []string // subset of files reported as changed; nil = all
		in      string
		want    string // "" means unchanged
	}{
		{name: "sentence", files: []string{"report.md"},
			in: "Saved report.md.", want: "Saved " + V + "report.md."},
		{name: "start and end", files: []string{"report.md"},
			in: "report.md", want: V + "report.md"},
		{name: "nested changed file", files: []string{"out/deep/report.md"},
			in: "Saved report.md", want: "Saved " + V + "out/deep/report.md"},
		{name: "twice", files: []string{"report.md"},
			in: "report.md and report.md!", want: V + "report.md and " + V + "report.md!"},
		{name: "punctuation around", files: []string{"report.md"},
			in:   "(report.md), `report.md`, \"report.md\"; 'report.md': report.md?",
			want: "(" + V + "report.md), `" + V + "report.md`, \"" + V + "report.md\"; '" + V + "report.md': " + V + "report.md?"},
		{name: "double period allowed", files: []string{"report.md"},
			in: "report.md..", want: V + "report.md.."},
		{name: "inside a longer path", files: []string{"report.md"},
			in: "see old/report.md and /tmp/report.md"},
		{name: "backslash path", files: []string{"report.md"},
			in: `see old\report.md and report.md\x`},
		{name: "longer extension", files: []string{"report.md"},
			in: "report.md.bak"},
		{name: "prefix dash", files: []string{"report.md"},
			in: "my-report.md"},
		{name: "prefix word", files: []string{"report.md"},
			in: "myreport.md and my_report.md and 2report.md"},
		{name: "prefix dot", files: []string{"report.md"},
			in: ".report.md"},
		{name: "directory segment", files: []string{"report.md"},
			in: "report.md/ and report.md/x"},
		{name: "suffix word", files: []string{"report.md"},
			in: "report.md2 report.md_x report.md-old"},
		{name: "unicode neighbours are word characters", files: []string{"ma.txt"},
			in: "cinéma.txt and ma.txté"},
		{name: "case sensitive", files: []string{"report.md"},
			in: "Report.md REPORT.MD"},
		{name: "ambiguous basename", files: []string{"a/report.md", "b/report.md"},
			in: "Saved report.md."},
		{name: "ambiguous but the full path still resolves", files: []string{"a/report.md", "b/report.md"},
			in: "Saved {WS}/a/report.md.", want: "Saved " + V + "a/report.md."},
		{name: "same file listed twice", files: []string{"report.md"}, changed: []string{"report.md", "report.md"},
			in: "Saved report.md.", want: "Saved " + V + "report.md."},
		{name: "unchanged file not used", files: []string{"report.md", "other.md"}, changed: []string{"other.md"},
			in: "Saved report.md."},
		{name: "longest first", files: []string{"x/a.txt", "data.txt"},
			in: "data.txt and a.txt", want: V + "data.txt and " + V + "x/a.txt"},
		{name: "longer name containing a space", files: []string{"my report.md", "sub/report.md"},
			in: "Saved my report.md and report.md.", want: "Saved " + V + "my report.md and " + V + "sub/report.md."},
		{name: "longer name with a suffix name", files: []string{"report (1).md", "x/(1).md"},
			in: "report (1).md", want: V + "report (1).md"},
		{name: "not inside a path rewritten from a file URI", files: []string{"old report.md", "report.md"}, changed: []string{"report.md"},
			in: "Compare file://{WS}/old%20report.md with report.md.", want: "Compare " + V + "old report.md with " + V + "report.md."},
		{name: "full path and bare name", files: []string{"report.md"},
			in: "{WS}/report.md is report.md", want: V + "report.md is " + V + "report.md"},
		{name: "no changed files", files: []string{"report.md"}, changed: []string{},
			in: "Saved report.md."},
		{name: "ordinary words named like a changed file", files: []string{"slept 3000ms", "3000ms", "Makefile", ".env", "1.5", "v1.2", "a.b c"},
			in: "slept 3000ms; run Makefile with .env, version 1.5 or v1.2, a.b c"},
		{name: "file-like name next to word-like ones", files: []string{"slept 3000ms", "notes.txt"},
			in: "slept 3000ms, then wrote notes.txt", want: "slept 3000ms, then wrote " + V + "notes.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var changed []string
			for _, f := range tc.files {
				p := write(t, filepath.Join(e.ws, filepath.FromSlash(f)), "x")
				if tc.changed == nil {
					changed = append(changed, p)
				}
			}
			for _, f := range tc.changed {
				changed = append(changed, filepath.Join(e.ws, filepath.FromSlash(f)))
			}
			in := strings.ReplaceAll(tc.in, "{WS}", e.ws)
			want := tc.want
			if want == "" {
				want = in
			}
			tr := virtualpath.NewTranslator(e.root, "", changed)
			if got := tr.Text(in); got != want {
				t.Fatalf("Text(%q)\n got %q\nwant %q", in, got, want)
			}
		})
	}
}

// Changed files outside the user-data root give no bare names.
func TestBareNamesOutside(t *testing.T) {
	e := newEnv(t)
	p := write(t, filepath.Join(e.outside, "report.md"), "x")
	tr := virtualpath.NewTranslator(e.root, "", []string{p})
	if got := tr.Text("Saved report.md."); got != "Saved report.md." {
		t.Fatalf("got %q", got)
	}
}
