package plugins_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// ownModuleGoMod is the go.mod a plugin author's module has after
// `go get github.com/antler-mcp/antler/sdk`, with the checkout standing in
// for the published module.
const ownModuleGoMod = `module example.com/audit

go 1.26.8

require github.com/antler-mcp/antler v0.0.0

replace github.com/antler-mcp/antler => %s
`

// TestPluginInItsOwnModule is README's "Writing a plugin" done outside this
// repository: testdata/ownmodule, copied into a module of its own in a
// temporary directory, vets and passes its sdktest unit test natively,
// builds for wasip1 and natively, and the host loads both builds and calls
// them. The module is tidied first, with the module proxy, as an author's
// `go get` and `go mod tidy` do: a dependency written before module graph
// pruning, such as go-hclog, brings the go.mod files of its own
// requirements, which the checkout's own build never reads, so a fresh
// module cache lacks them. Then the proxy is switched off, so that vet, test
// and build resolve everything from the replaced checkout and the local
// module cache.
func TestPluginInItsOwnModule(t *testing.T) {
	root := testmcp.RepoRoot(t)
	dir := t.TempDir()
	for _, name := range []string{"main.go", "main_test.go", "serve.go", "wasm.go"} {
		copyFile(t, filepath.Join(root, "internal", "plugins", "testdata", "ownmodule", name), filepath.Join(dir, name))
	}
	write(t, filepath.Join(dir, "go.mod"), fmt.Sprintf(ownModuleGoMod, root))
	// The checkout's go.sum holds every checksum the plugin's build needs.
	copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(dir, "go.sum"))
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))

	goCmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the plugin's module: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	goCmd("mod", "tidy")
	t.Setenv("GOPROXY", "off")
	goCmd("vet", ".")
	goCmd("test", "-count=1", ".")
	native := filepath.Join(dir, "audit")
	goCmd("build", "-o", native, ".")
	wasmFile := plugintest.BuildWasm(t, dir)

	var logged testmcp.LockedBuffer
	host, err := plugins.NewHost("", slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(context.Background()) })
	for _, tc := range []struct{ kind, path string }{
		{plugins.KindWasm, wasmFile},
		{plugins.KindProcess, native},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			p, err := host.Load(context.Background(), plugins.Entry{Name: "audit-" + tc.kind, Kind: tc.kind, Path: tc.path})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			req := abi.InterceptRequest{Server: "files", Tool: "files_read", OriginalTool: "read", UserID: "alice"}
			got, err := p.Intercept(context.Background(), "alice", &req)
			want := abi.InterceptResponse{Action: abi.ActionContinue, SetHeaders: []abi.Header{{Name: "X-Audited", Value: "yes"}}}
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("read: %+v, %v; want %+v", got, err, want)
			}
			req = abi.InterceptRequest{Server: "files", Tool: "files_delete", OriginalTool: "delete", UserID: "alice"}
			if got, err := p.Intercept(context.Background(), "alice", &req); err != nil || got.Action != abi.ActionDeny {
				t.Fatalf("delete: %+v, %v; want a denial", got, err)
			}
		})
	}
	// The Wasm build's sdk.Log reaches the host's log, tagged with the plugin.
	if out := logged.String(); !strings.Contains(out, "plugin=audit-wasm") || !strings.Contains(out, "audit: alice called files_read") {
		t.Errorf("the host's log lacks the Wasm plugin's line:\n%s", out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, string(b))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
