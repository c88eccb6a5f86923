package config_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

// TestLocatorFindsWhatLocateFinds: a Locator made once answers as Locate
// called afresh would, after every change it must follow (a default file
// appearing or going, a variable set, changed or cleared), and stats the
// file it names.
func TestLocatorFindsWhatLocateFinds(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	unclean := elsewhere + "/sub/../b.json" // absolute, cleaned by both
	var mu sync.Mutex
	vars := map[string]string{}
	lookup := func(name string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		v, ok := vars[name]
		return v, ok
	}
	setVar := func(name, v string) {
		mu.Lock()
		defer mu.Unlock()
		vars[name] = v
	}
	for _, explicit := range []string{"", "flag.json"} {
		loc := config.NewLocator(explicit, lookup, dir)
		steps := []struct {
			name string
			do   func()
		}{
			{"nothing", func() {}},
			{"mcp_config.json appears", func() { writeFile(t, filepath.Join(dir, "mcp_config.json"), "{}") }},
			{"extensions_config.json appears", func() { writeFile(t, filepath.Join(dir, "extensions_config.json"), "{}") }},
			{"DeerFlow variable set", func() { setVar(config.EnvDeerFlowPath, "sub/d.json") }},
			{"ANTLER variable set", func() { setVar(config.EnvPath, "a.json") }},
			{"ANTLER variable changed", func() { setVar(config.EnvPath, unclean) }},
			{"its file appears", func() { writeFile(t, filepath.Join(elsewhere, "b.json"), "{}") }},
			{"variables cleared", func() { setVar(config.EnvPath, ""); setVar(config.EnvDeerFlowPath, "") }},
			{"extensions_config.json goes", func() { os.Remove(filepath.Join(dir, "extensions_config.json")) }},
			{"a directory by a default name", func() {
				os.Remove(filepath.Join(dir, "mcp_config.json"))
				if err := os.Mkdir(filepath.Join(dir, "extensions_config.json"), 0o700); err != nil {
					t.Fatal(err)
				}
			}},
		}
		for _, step := range steps {
			step.do()
			path, st := loc.Find()
			want, _ := config.Locate(explicit, lookup, dir)
			equal(t, explicit+": "+step.name+": path", path, want)
			equal(t, explicit+": "+step.name+": stat", st, config.StatFile(want))
		}
		os.Remove(filepath.Join(elsewhere, "b.json"))
		os.Remove(filepath.Join(dir, "extensions_config.json"))
	}
}
