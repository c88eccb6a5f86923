package virtualpath_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

var textSeeds = []string{
	"",
	"Wrote /tmp/x/users/u/threads/t/user-data/workspace/a.txt.",
	"Saved report.md. See (./out/a.csv) and `../b.txt`, 'c/d.json'!",
	"file:///tmp/my%20file.txt file://relative/x file:// file:a",
	"https://example.com/x?y=1#z http://h/a/b.",
	"/ // /// ./ ../ .../ a/ /etc/passwd /proc/self/root/etc/hosts",
	"[link](/mnt/user-data/workspace/a.txt) <https://e.com/> \"/x/y\"",
	"已保存 报告/总结.md。 données/a.txt\u00a0ok",
	"C:\\Users\\x\\a.txt \\\\server\\share",
	strings.Repeat("a/", 300) + "b.txt",
	"\x00/\xff\xfe/a.txt",
	"slept 3000ms",
	"3/4 of tests pass, and/or km/h, ./.. ../.. ../user-data ../user-data/x",
	"Error: ENOENT: no such file or directory, open '/nope/x.txt'",
	"[DIR] d/ [FILE] d/a.txt:12:3 /dir/ file:///",
}

// With an empty user-data root nothing resolves inside it, so Text must
// return its input unchanged, whatever the input.
func FuzzText(f *testing.F) {
	for _, s := range textSeeds {
		f.Add(s)
	}
	root := filepath.Join(f.TempDir(), "users", "u", "threads", "t", "user-data")
	if err := os.MkdirAll(root, 0o755); err != nil {
		f.Fatal(err)
	}
	write(f, filepath.Join(root, "..", "sibling.txt"), "outside")
	tr := virtualpath.NewTranslator(root, root, nil)
	f.Fuzz(func(t *testing.T, s string) {
		if got := tr.Text(s); got != s {
			t.Fatalf("Text(%q) = %q, want unchanged", s, got)
		}
	})
}

// Bare-name replacement only ever swaps a whole changed name for its virtual
// path: mapping the virtual path back gives the input again.
func FuzzBareNames(f *testing.F) {
	for _, s := range textSeeds {
		f.Add(s)
	}
	f.Add("report.md report.md. xreport.md report.md/ report.md.bak (report.md)")
	f.Add("slept 3000ms; Makefile .env 1.5 report.md")
	e := newEnv(f)
	p := write(f, filepath.Join(e.ws, "out", "report.md"), "x")
	// Word-like names of changed files are never rewritten alone; if one
	// were, mapping report.md's path back would not give the input.
	var changed []string
	for _, n := range []string{"slept 3000ms", "Makefile", ".env", "1.5", "3000ms"} {
		changed = append(changed, write(f, filepath.Join(e.ws, n), "x"))
	}
	tr := virtualpath.NewTranslator(e.root, "", append(changed, p))
	v := virtualpath.Prefix + "/workspace/out/report.md"
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, virtualpath.Prefix) || strings.Contains(s, e.tmp) {
			return
		}
		got := tr.Text(s)
		if back := strings.ReplaceAll(got, v, "report.md"); back != s {
			t.Fatalf("Text(%q) = %q: more than whole names replaced", s, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Text(%q) = %q: invalid UTF-8", s, got)
		}
	})
}

// RewriteResult never panics and turns valid JSON into valid JSON.
func FuzzRewriteResult(f *testing.F) {
	f.Add(`{"content":[{"type":"text","text":"report.md"}],"_meta":null}`)
	f.Add(`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"report.md"}}]}`)
	f.Add(`{"content":[{"type":"resource_link","uri":"report.md"}],"structuredContent":{"n":1e400}}`)
	f.Add(`null`)
	f.Add(`[]`)
	f.Add(`{"content":[null,1,"",{}],"_meta":"x"}`)
	f.Add(`{"content":[{"type":"text","text":"ENOENT: open '/nope/x'"}],"isError":true,"structuredContent":{"content":"a\nreport.md","n":[1.50,{"p":"./report.md"}]}}`)
	f.Add(`{"structuredContent":"report.md"}`)
	f.Add(`{"structuredContent":null,"content":[{"type":"resource_link","uri":"file:///missing/x"}]}`)
	e := newEnv(f)
	p := write(f, filepath.Join(e.ws, "report.md"), "x")
	changed := []string{p}
	tr := virtualpath.NewTranslator(e.root, e.ws, changed)
	f.Fuzz(func(t *testing.T, s string) {
		got := virtualpath.RewriteResult(json.RawMessage(s), tr, changed)
		if json.Valid([]byte(s)) && !json.Valid(got) {
			t.Fatalf("RewriteResult(%q) = %q: invalid JSON", s, got)
		}
	})
}

// Ref of a path spelled under the user-data root (no symlinks in this tree)
// translates exactly when the cleaned path stays inside it, to the prefix
// plus the cleaned remainder, whether or not it exists; a path spelled
// elsewhere never translates unless it leads back in by existing folders.
// A spelling with "://" is a URL and may stay as it is.
func FuzzRef(f *testing.F) {
	for _, s := range []string{"workspace/a.txt", "workspace/new/x.csv", "", ".", "..", "../x", "workspace/../../x",
		"workspace/a.txt/x", "outputs/", "a\x00b", "workspace//a.txt", "workspace/./a.txt", "workspace/d/", "slept 3000ms"} {
		f.Add(s)
	}
	e := newEnv(f)
	write(f, filepath.Join(e.ws, "a.txt"), "x")
	write(f, filepath.Join(e.ws, "d", "b.txt"), "x")
	write(f, filepath.Join(e.outside, "a.txt"), "x")
	tr := virtualpath.NewTranslator(e.root, e.ws, nil)
	f.Fuzz(func(t *testing.T, s string) {
		for _, base := range []string{e.root, e.outside} {
			p := base + "/" + s
			v, ok := tr.Ref(p)
			clean := filepath.Clean(p)
			rel, err := filepath.Rel(e.root, clean)
			inside := err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
			if ok {
				want := virtualpath.Prefix
				if rel != "." {
					want += "/" + rel
				}
				if !inside || v != want {
					t.Fatalf("Ref(%q) = %q, want %q (inside: %v)", p, v, want, inside)
				}
				continue
			}
			// A reference holding "://" is a URL, never a path (Ref
			// leaves it alone whatever it spells).
			plain := len(p) <= 4096 && !strings.Contains(s, "\x00") && !strings.Contains("/"+s+"/", "/../") && !strings.Contains(p, "://")
			if inside && plain {
				t.Fatalf("Ref(%q) not translated, but it lies inside the root", p)
			}
		}
	})
}
