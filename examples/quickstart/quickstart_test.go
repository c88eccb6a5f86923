// Package quickstart holds the quick start's configuration; its test checks
// that the configuration is safe as written.
package quickstart

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/settings"
)

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// The quick start runs from the repository root. Agents write files only
// below the data dir (the thread workspaces). A server with a cwd runs its
// launcher there unconfined, so that cwd, and every folder its launcher
// reads configuration from (the cwd and its parents, for `go run`: go.mod,
// go.work, vendor), must lie outside the data dir, and so must the packages
// it builds. A server without cwd runs confined in the thread workspace.
func TestQuickStartLaunchersReadNoAgentFile(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	st, err := settings.Load("antler.yaml", lookup)
	if err != nil {
		t.Fatal(err)
	}
	ext, _, err := config.Load("extensions_config.json", lookup)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, st.DataDir)
	if st.DataDir == "" || within(root, data) {
		t.Fatalf("data_dir %q: the folder antler starts in would be inside the agents' data", st.DataDir)
	}
	if len(ext.Servers) == 0 {
		t.Fatal("no servers")
	}
	for _, s := range ext.Servers {
		if s.Cwd == "" {
			continue
		}
		cwd := filepath.Join(root, s.Cwd)
		for d := cwd; ; d = filepath.Dir(d) {
			if within(d, data) {
				t.Errorf("%s: its launcher reads configuration from %s, inside the data dir %s", s.Name, d, data)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
		for _, a := range s.Args {
			if strings.HasPrefix(a, ".") && within(filepath.Join(cwd, a), data) {
				t.Errorf("%s: argument %q is inside the data dir", s.Name, a)
			}
		}
	}
}
