package virtualpath_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

func TestRef(t *testing.T) {
	tests := []struct {
		name string
		// setup creates files and returns the reference and the server cwd.
		setup  func(t *testing.T, e env) (ref, cwd string)
		want   string // "" means not rewritten
		wantOK bool
	}{
		{
			name: "absolute path inside",
			setup: func(t *testing.T, e env) (string, string) {
				return write(t, filepath.Join(e.ws, "a.txt"), "x"), ""
			},
			want: vws + "a.txt", wantOK: true,
		},
		{
			name: "nested dirs",
			setup: func(t *testing.T, e env) (string, string) {
				return write(t, filepath.Join(e.ws, "d1", "d2", "b.csv"), "x"), ""
			},
			want: vws + "d1/d2/b.csv", wantOK: true,
		},
		{
			name: "file outside workspace but inside user-data",
			setup: func(t *testing.T, e env) (string, string) {
				return write(t, filepath.Join(e.root, "outputs", "o.md"), "x"), ""
			},
			want: virtualpath.Prefix + "/outputs/o.md", wantOK: true,
		},
		{
			name: "file URI",
			setup: func(t *testing.T, e env) (string, string) {
				return "file://" + write(t, filepath.Join(e.ws, "a.txt"), "x"), ""
			},
			want: vws + "a.txt", wantOK: true,
		},
		{
			name: "file URI with percent-encoded space",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "my file.txt"), "x")
				return "file://" + e.ws + "/my%20file.txt", ""
			},
			want: vws + "my file.txt", wantOK: true,
		},
		{
			name: "file URI with localhost authority",
			setup: func(t *testing.T, e env) (string, string) {
				return "file://localhost" + write(t, filepath.Join(e.ws, "a.txt"), "x"), ""
			},
			want: vws + "a.txt", wantOK: true,
		},
		{
			name: "file URI with remote authority ignored",
			setup: func(t *testing.T, e env) (string, string) {
				return "file://otherhost" + write(t, filepath.Join(e.ws, "a.txt"), "x"), ""
			},
		},
		{
			name: "relative file URI ignored",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "relative", "x"), "x")
				write(t, filepath.Join(e.ws, "x"), "x")
				return "file://relative/x", e.ws
			},
		},
		{
			name: "relative file URI naming the workspace ignored",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "a.txt"), "x")
				return "file://workspace/a.txt", e.root
			},
		},
		{
			name: "opaque relative file URI ignored",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "a.txt"), "x")
				return "file:a.txt", e.ws
			},
		},
		{
			name: "file URI with empty path ignored",
			setup: func(t *testing.T, e env) (string, string) {
				return "file://", e.ws
			},
		},
		{
			name: "malformed file URI ignored",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "a%zz.txt"), "x")
				return "file://" + e.ws + "/a%zz.txt", ""
			},
		},
		{
			name: "http URI ignored",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "a.txt"), "x")
				return "http://example.com" + e.ws + "/a.txt", ""
			},
		},
		{
			name: "other scheme ignored",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "a.txt"), "x")
				return "s3://" + e.ws + "/a.txt", ""
			},
		},
		{
			name: "directory rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "dir", "f"), "x")
				return filepath.Join(e.ws, "dir"), ""
			},
			want: vws + "dir", wantOK: true,
		},
		{
			name: "the workspace itself rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return e.ws, ""
			},
			want: virtualpath.Prefix + "/workspace", wantOK: true,
		},
		{
			name: "the root itself rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return e.root, ""
			},
			want: virtualpath.Prefix, wantOK: true,
		},
		{
			name: "missing file rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return filepath.Join(e.ws, "missing.txt"), ""
			},
			want: vws + "missing.txt", wantOK: true,
		},
		{
			name: "missing file in missing folders rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return filepath.Join(e.ws, "new", "deeper", "x.csv"), ""
			},
			want: vws + "new/deeper/x.csv", wantOK: true,
		},
		{
			name: "missing folder of the user-data root rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return "file://" + filepath.Join(e.root, "outputs", "report.md"), ""
			},
			want: virtualpath.Prefix + "/outputs/report.md", wantOK: true,
		},
		{
			name: "file used as a folder rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return filepath.Join(write(t, filepath.Join(e.ws, "a.txt"), "x"), "x"), ""
			},
			want: vws + "a.txt/x", wantOK: true,
		},
		{
			name: "missing file outside root not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return filepath.Join(e.outside, "missing.txt"), ""
			},
		},
		{
			name: "missing thread of another user not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return filepath.Join(e.tmp, "users", "v", "threads", "t", "user-data", "workspace", "a.txt"), ""
			},
		},
		{
			name: "missing file under a symlinked dir pointing outside not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				symlink(t, e.outside, filepath.Join(e.ws, "out"))
				return filepath.Join(e.ws, "out", "new.txt"), ""
			},
		},
		{
			name: "missing path with dot-dot not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return e.ws + "/nope/../a.txt", ""
			},
		},
		{
			name: "dangling symlink pointing outside not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return symlink(t, filepath.Join(e.outside, "gone.txt"), filepath.Join(e.ws, "away.txt")), ""
			},
		},
		{
			name: "relative missing file not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return "sub/missing.txt", e.ws
			},
		},
		{
			name: "relative directory rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "sub", "a.txt"), "x")
				return "sub", e.ws
			},
			want: vws + "sub", wantOK: true,
		},
		{
			name: "relative dots only not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return "./..", e.ws
			},
		},
		{
			name: "file outside root not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return write(t, filepath.Join(e.outside, "a.txt"), "x"), ""
			},
		},
		{
			name: "sibling with root as name prefix not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return write(t, e.root+"-evil/workspace/a.txt", "x"), ""
			},
		},
		{
			name: "symlink inside pointing outside not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				target := write(t, filepath.Join(e.outside, "secret.txt"), "x")
				return symlink(t, target, filepath.Join(e.ws, "link.txt")), ""
			},
		},
		{
			name: "symlinked dir inside pointing outside not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.outside, "secret.txt"), "x")
				symlink(t, e.outside, filepath.Join(e.ws, "out"))
				return filepath.Join(e.ws, "out", "secret.txt"), ""
			},
		},
		{
			name: "symlink outside pointing inside rewritten to inside path",
			setup: func(t *testing.T, e env) (string, string) {
				target := write(t, filepath.Join(e.ws, "real", "a.txt"), "x")
				return symlink(t, target, filepath.Join(e.outside, "link.txt")), ""
			},
			want: vws + "real/a.txt", wantOK: true,
		},
		{
			name: "symlink inside pointing inside rewritten to target",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "real.txt"), "x")
				return symlink(t, "real.txt", filepath.Join(e.ws, "alias.txt")), ""
			},
			want: vws + "real.txt", wantOK: true,
		},
		{
			name: "dangling symlink not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return symlink(t, filepath.Join(e.ws, "gone.txt"), filepath.Join(e.ws, "dangling.txt")), ""
			},
		},
		{
			name: "dot-dot escaping the root not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.outside, "a.txt"), "x")
				return e.ws + "/../../../../../../outside/a.txt", ""
			},
		},
		{
			name: "dot-dot staying inside rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "a.txt"), "x")
				write(t, filepath.Join(e.ws, "sub", "b.txt"), "x")
				return e.ws + "/sub/../a.txt", ""
			},
			want: vws + "a.txt", wantOK: true,
		},
		{
			name: "relative path with cwd rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "sub", "a.txt"), "x")
				return "sub/a.txt", e.ws
			},
			want: vws + "sub/a.txt", wantOK: true,
		},
		{
			name: "dot-slash relative path with cwd rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "a.txt"), "x")
				return "./a.txt", e.ws
			},
			want: vws + "a.txt", wantOK: true,
		},
		{
			name: "relative path without cwd not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "sub", "a.txt"), "x")
				return "sub/a.txt", ""
			},
		},
		{
			name: "relative path escaping cwd not rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.outside, "a.txt"), "x")
				return "../../../../../../outside/a.txt", e.ws
			},
		},
		{
			name: "empty reference",
			setup: func(t *testing.T, e env) (string, string) {
				return "", e.ws
			},
		},
		{
			name: "NUL byte",
			setup: func(t *testing.T, e env) (string, string) {
				write(t, filepath.Join(e.ws, "a.txt"), "x")
				return filepath.Join(e.ws, "a.txt") + "\x00", ""
			},
		},
		{
			name: "very long input",
			setup: func(t *testing.T, e env) (string, string) {
				return e.ws + "/" + strings.Repeat("a/", 5000) + "x.txt", e.ws
			},
		},
		{
			name: "very long single component rewritten",
			setup: func(t *testing.T, e env) (string, string) {
				return e.ws + "/" + strings.Repeat("b", 3000), e.ws
			},
			want: vws + strings.Repeat("b", 3000), wantOK: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ref, cwd := tc.setup(t, e)
			tr := virtualpath.NewTranslator(e.root, cwd, nil)
			got, ok := tr.Ref(ref)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("Ref(%q) = %q, %v; want %q, %v", ref, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// The user-data root itself may be reached through a symlink: the translator
// resolves it once, so references through either spelling translate.
func TestRefSymlinkedRoot(t *testing.T) {
	e := newEnv(t)
	write(t, filepath.Join(e.ws, "a.txt"), "x")
	alias := symlink(t, e.root, filepath.Join(e.tmp, "alias-root"))
	for _, root := range []string{e.root, alias} {
		tr := virtualpath.NewTranslator(root, "", nil)
		for _, ref := range []string{filepath.Join(e.ws, "a.txt"), filepath.Join(alias, "workspace", "a.txt")} {
			if got, ok := tr.Ref(ref); !ok || got != vws+"a.txt" {
				t.Errorf("root %q: Ref(%q) = %q, %v", root, ref, got, ok)
			}
		}
		// A missing path is looked at only under the root as given or as
		// resolved.
		for _, ref := range []string{filepath.Join(e.ws, "new", "b.txt"), filepath.Join(root, "workspace", "new", "b.txt")} {
			if got, ok := tr.Ref(ref); !ok || got != vws+"new/b.txt" {
				t.Errorf("root %q: missing Ref(%q) = %q, %v", root, ref, got, ok)
			}
		}
	}
}

// A root that does not exist translates nothing and does not fail.
func TestRefMissingRoot(t *testing.T) {
	e := newEnv(t)
	p := write(t, filepath.Join(e.outside, "a.txt"), "x")
	tr := virtualpath.NewTranslator(filepath.Join(e.tmp, "nope"), "", nil)
	if got, ok := tr.Ref(p); ok {
		t.Fatalf("Ref = %q, want not rewritten", got)
	}
}
