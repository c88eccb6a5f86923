// Package plugintest helps plugin authors (and Antler's own tests) test a
// plugin against its real Wasm build: build the guest from source with the
// Go toolchain, load it into the same runtime the host uses, and call it.
package plugintest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/plugins"
)

// builds caches one build per source folder for the test process.
var builds sync.Map // abs dir → *build

// compiled is a compilation cache shared by every Load in the test process:
// compiling a Go guest takes seconds (tens under -race), and tests load the
// same build many times.
var compiled struct {
	once sync.Once
	dir  string
}

func compileCacheDir() string {
	compiled.once.Do(func() {
		compiled.dir, _ = os.MkdirTemp("", "antler-wasm-cache-") // "" on error: memory
	})
	return compiled.dir
}

type build struct {
	once sync.Once
	path string
	out  []byte
	err  error
}

// BuildWasm compiles the Go guest in dir with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared (once per folder per test process) and returns the
// .wasm path. The test fails with the compiler output on error.
func BuildWasm(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := builds.LoadOrStore(abs, &build{})
	b := v.(*build)
	b.once.Do(func() {
		outDir, err := os.MkdirTemp("", "antler-wasm-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(outDir, filepath.Base(abs)+".wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", b.path, ".")
		cmd.Dir = abs
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		b.out, b.err = cmd.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("plugintest: build %s: %v\n%s", dir, b.err, b.out)
	}
	return b.path
}

// Entry is a plugin's settings as an `mcpInterceptors` entry gives them (the
// host's own type, named here so a test outside this module can build one).
type Entry = plugins.Entry

// Plugin is a loaded plugin: Intercept runs a tool call through it as the host
// would.
type Plugin = plugins.Plugin

// Load builds dir and loads it as a wasm plugin with entry's settings (Kind
// and Path are filled in). The plugin and its host close when the test ends.
func Load(t testing.TB, dir string, entry Entry) *Plugin {
	t.Helper()
	entry.Kind, entry.Path = plugins.KindWasm, BuildWasm(t, dir)
	if entry.Name == "" {
		entry.Name = filepath.Base(dir)
	}
	host, err := plugins.NewHost(compileCacheDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(context.Background()) })
	p, err := host.Load(context.Background(), entry)
	if err != nil {
		t.Fatalf("plugintest: load %s: %v", dir, err)
	}
	t.Cleanup(p.Close)
	return p
}
