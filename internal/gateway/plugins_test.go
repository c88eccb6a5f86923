package gateway_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// The example plugins, built once per test process.
const (
	tenantSrc    = "../../examples/plugins/tenantheader"
	argpolicySrc = "../../examples/plugins/argpolicy"
	redactorSrc  = "../../examples/plugins/redactor"
)

// wasmCache is a compilation cache shared by every gateway in the test
// process: compiling a Go guest takes seconds, tens under -race.
var wasmCache struct {
	once sync.Once
	dir  string
}

func sharedWasmCache() string {
	wasmCache.once.Do(func() {
		wasmCache.dir, _ = os.MkdirTemp("", "antler-gateway-wasm-") // "": memory only
	})
	return wasmCache.dir
}

// pluginFiles copies the example builds into dir under the given names
// (name → source folder).
func pluginFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		copyFile(t, plugintest.BuildWasm(t, src), filepath.Join(dir, name))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// newPluginAPI serves doc, written as extensions_config.json into dir (where
// the plugin files are), with the credential tests' API keys and log sink.
func newPluginAPI(t *testing.T, dir, doc string) (*credAPI, string) {
	t.Helper()
	path := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cache := toolcache.New(toolcache.Options{ConfigPath: path, Logger: log, PluginCacheDir: sharedWasmCache()})
	t.Cleanup(cache.Close)
	keys := []settings.Key{
		{Key: "k-alice", User: "alice", Role: settings.RoleAgent},
		{Key: "k-carol", User: "carol", Role: settings.RoleAgent},
		{Key: "k-admin", User: "root", Role: settings.RoleAdmin},
	}
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(keys), Logger: log}).Handler())
	t.Cleanup(srv.Close)
	return &credAPI{api: &api{t: t, url: srv.URL}, logs: logs, responses: &syncBuffer{}}, path
}

// denied checks a call answered as the tool's error with exactly want.
func denied(t *testing.T, code int, res map[string]any, want string) {
	t.Helper()
	if code != 200 || res["isError"] != true || text(res) != want {
		t.Errorf("%d %v, want the tool error %q", code, res, want)
	}
}

const tenantDenial = "This tool needs your tenant token: send it as the 'tenant' secret."

func TestPluginsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	pluginFiles(t, dir, map[string]string{"tenant.wasm": tenantSrc, "argpolicy.wasm": argpolicySrc, "redactor.wasm": redactorSrc})
	url := testmcp.StartHTTP(t, "http") + "/mcp"
	a, _ := newPluginAPI(t, dir, fmt.Sprintf(`{
	  "mcpServers": {
	    "http": {"type": "http", "url": %[1]q},
	    "other": {"type": "http", "url": %[1]q},
	    "nogrant": {"type": "http", "url": %[1]q}
	  },
	  "mcpInterceptors": [
	    "wasm:./argpolicy.wasm",
	    {"kind": "wasm", "path": "./tenant.wasm", "servers": ["http"], "grants": {"secrets": ["tenant"]}},
	    {"kind": "wasm", "path": "tenant.wasm", "servers": ["nogrant"], "grants": {"secrets": ["region"]}},
	    {"kind": "wasm", "path": "./tenant.wasm", "servers": ["other"], "grants": {"secrets": ["*"]},
	     "config": {"header": "X-Other-Tenant", "secret": "other_tenant"}},
	    "my_pkg.mod:build",
	    {"kind": "wasm", "path": "argpolicy.wasm", "timeout_ms": 5000,
	     "config": {"deny": [{"tool": "*echo", "pattern": "rm\\s+-rf", "message": "Recursive deletes are not allowed."},
	                         {"tool": "*echo", "pattern": "long-denial", "message": "a%[2]s"}]}},
	    {"kind": "wasm", "path": "./redactor.wasm", "config": {"patterns": ["sk-[A-Za-z0-9]+"]}}
	  ]}`, url, strings.Repeat("é", 600)))

	t.Run("discovery succeeds and warns about the DeerFlow entry", func(t *testing.T) {
		code, st := a.as("k-admin").do("GET", "/api/mcp/servers", "")
		if code != 200 {
			t.Fatalf("servers: %d %v", code, st)
		}
		for _, s := range st["servers"].([]any) {
			if m := s.(map[string]any); m["state"] != "connected" {
				t.Errorf("server %v", m)
			}
		}
		warnings, _ := st["warnings"].([]any)
		found := false
		for _, w := range warnings {
			s := fmt.Sprint(w)
			found = found || strings.Contains(s, "mcpInterceptors[4]") && strings.Contains(s, `"my_pkg.mod:build"`) && strings.Contains(s, "skipping")
		}
		if !found {
			t.Errorf("warnings %v do not name the skipped mcpInterceptors[4] \"my_pkg.mod:build\"", warnings)
		}
	})

	t.Run("a granted secret becomes the header", func(t *testing.T) {
		code, res, h := a.call("k-alice", "http_whoami", `{"secrets": {"tenant": "t-`+canary+`", "region": "eu"}}`)
		if code != 200 || res["isError"] == true || h["x-tenant-token"] != "t-"+canary {
			t.Errorf("%d %v: x-tenant-token %q, want t-%s", code, res, h["x-tenant-token"], canary)
		}
		if _, ok := h["x-other-tenant"]; ok {
			t.Errorf("the entry scoped to 'other' ran on 'http': %v", h)
		}
	})

	t.Run("without the secret the plugin denies", func(t *testing.T) {
		code, res, _ := a.call("k-alice", "http_whoami", `{}`)
		denied(t, code, res, tenantDenial)
	})

	t.Run("a plugin not granted the secret does not see it", func(t *testing.T) {
		code, res, _ := a.call("k-alice", "nogrant_whoami", `{"secrets": {"tenant": "t-`+canary+`", "region": "eu"}}`)
		denied(t, code, res, tenantDenial)
	})

	t.Run("servers scoping", func(t *testing.T) {
		// Only the entry scoped to 'other' runs: the 'http' one would deny
		// this call, which carries no tenant secret.
		code, res, h := a.call("k-alice", "other_whoami", `{"secrets": {"other_tenant": "o-`+canary+`"}}`)
		if code != 200 || res["isError"] == true || h["x-other-tenant"] != "o-"+canary {
			t.Errorf("%d %v: headers %v", code, res, h)
		}
		if _, ok := h["x-tenant-token"]; ok {
			t.Errorf("the entry scoped to 'http' ran on 'other': %v", h)
		}
		code, res, _ = a.call("k-alice", "other_whoami", `{"secrets": {"tenant": "t-1"}}`)
		denied(t, code, res, "This tool needs your tenant token: send it as the 'other_tenant' secret.")
	})

	t.Run("argpolicy denies matching arguments", func(t *testing.T) {
		tenant := `"secrets": {"tenant": "t-1"}`
		code, res, _ := a.call("k-alice", "http_echo", `{"arguments": {"message": "rm -rf /"}, `+tenant+`}`)
		denied(t, code, res, "Recursive deletes are not allowed.")
		code, res, _ = a.call("k-alice", "other_echo", `{"arguments": {"message": "please rm   -rf ~"}, "secrets": {"other_tenant": "o-1"}}`)
		denied(t, code, res, "Recursive deletes are not allowed.")
		if code, res, _ = a.call("k-alice", "http_echo", `{"arguments": {"message": "rm -r f"}, `+tenant+`}`); code != 200 || res["isError"] == true || text(res) != "Echo: rm -r f" {
			t.Errorf("harmless echo: %d %v", code, res)
		}
		// The pattern is scoped to *echo: the same arguments reach whoami.
		if code, res, _ = a.call("k-alice", "http_whoami", `{"arguments": {"message": "rm -rf /"}, `+tenant+`}`); code != 200 || res["isError"] == true {
			t.Errorf("whoami with matching arguments: %d %v", code, res)
		}
	})

	t.Run("a long denial is cut between characters", func(t *testing.T) {
		code, res, _ := a.call("k-alice", "http_echo", `{"arguments": {"message": "long-denial"}, "secrets": {"tenant": "t-1"}}`)
		denied(t, code, res, "a"+strings.Repeat("é", 499)+"…")
	})

	t.Run("redactor rewrites the result", func(t *testing.T) {
		code, res, _ := a.call("k-alice", "http_echo", `{"arguments": {"message": "key sk-abc123 ok"}, "secrets": {"tenant": "t-1"}}`)
		if code != 200 || res["isError"] == true || text(res) != "Echo: key [REDACTED] ok" {
			t.Errorf("%d %v", code, res)
		}
		// structuredContent too: the upstream received the real value, the
		// agent sees it redacted.
		_, res, h := a.call("k-alice", "http_whoami", `{"secrets": {"tenant": "sk-tenant42"}}`)
		if h["x-tenant-token"] != "[REDACTED]" || strings.Contains(fmt.Sprint(res), "sk-tenant42") {
			t.Errorf("whoami result %v", res)
		}
	})

	if i := strings.Index(a.logs.String(), canary); i >= 0 {
		t.Errorf("a secret reached a log line: …%s…", excerpt(a.logs.String(), i))
	}
}

// A string entry carries no grants: the plugin never sees a secret's value.
func TestStringEntryHasNoGrants(t *testing.T) {
	dir := t.TempDir()
	pluginFiles(t, dir, map[string]string{"tenant.wasm": tenantSrc})
	a, _ := newPluginAPI(t, dir, fmt.Sprintf(`{"mcpServers": {"http": {"type": "http", "url": %q}},
	  "mcpInterceptors": ["wasm:./tenant.wasm"]}`, testmcp.StartHTTP(t, "http")+"/mcp"))
	code, res, _ := a.call("k-alice", "http_whoami", `{"secrets": {"tenant": "t-1"}}`)
	denied(t, code, res, tenantDenial)
}

func TestMissingPluginFailsClosed(t *testing.T) {
	dir := t.TempDir()
	url := testmcp.StartHTTP(t, "http") + "/mcp"
	policy := `{"kind": "wasm", "path": "./policy.wasm", "config": {"deny": [{"pattern": "rm -rf", "message": "blocked"}]}}`
	a, path := newPluginAPI(t, dir, fmt.Sprintf(`{"mcpServers": {"http": {"type": "http", "url": %q}},
	  "mcpInterceptors": [%s]}`, url, policy))
	rm := `{"arguments": {"message": "rm -rf /"}}`

	unavailable := func(entry string) {
		t.Helper()
		code, res := a.as("k-alice").do("GET", "/api/mcp/tools", "")
		if msg := fmt.Sprint(res["error"]); code != 503 || !strings.Contains(msg, entry) || !strings.Contains(msg, "does not exist") {
			t.Errorf("tools: %d %v, want 503 naming %s", code, res, entry)
		}
		if code, res, _ := a.call("k-alice", "http_echo", rm); code != 503 {
			t.Errorf("call: %d %v, want 503: no call may go through unintercepted", code, res)
		}
	}
	unavailable("mcpInterceptors[0]")

	// The file appears: the next read loads it.
	copyFile(t, plugintest.BuildWasm(t, argpolicySrc), filepath.Join(dir, "policy.wasm"))
	code, res, _ := a.call("k-alice", "http_echo", rm)
	denied(t, code, res, "blocked")

	// A file that vanishes after a good load keeps the loaded plugin.
	if err := os.Remove(filepath.Join(dir, "policy.wasm")); err != nil {
		t.Fatal(err)
	}
	code, res, _ = a.call("k-alice", "http_echo", rm)
	denied(t, code, res, "blocked")
	if code, res, _ = a.call("k-alice", "http_echo", `{"arguments": {"message": "hi"}}`); text(res) != "Echo: hi" {
		t.Errorf("%d %v", code, res)
	}

	// A config edit adding an entry whose file is missing stops serving.
	copyFile(t, plugintest.BuildWasm(t, argpolicySrc), filepath.Join(dir, "policy.wasm"))
	doc := fmt.Sprintf(`{"mcpServers": {"http": {"type": "http", "url": %q}},
	  "mcpInterceptors": [%s, {"kind": "wasm", "path": "./gone.wasm"}]}`, url, policy)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	unavailable("mcpInterceptors[1]")
}

func TestPluginFileChangeReloads(t *testing.T) {
	dir := t.TempDir()
	pluginFiles(t, dir, map[string]string{"policy.wasm": argpolicySrc})
	echo := policyEcho(t, dir)
	code, res := echo("rm -rf /")
	denied(t, code, res, "blocked")
	if code, res = echo("sk-abc123"); text(res) != "Echo: sk-abc123" {
		t.Errorf("before the swap: %d %v", code, res)
	}

	copyFile(t, plugintest.BuildWasm(t, redactorSrc), filepath.Join(dir, "policy.wasm"))
	if code, res = echo("rm -rf /"); code != 200 || res["isError"] == true || text(res) != "Echo: rm -rf /" {
		t.Errorf("after the swap the old policy still runs: %d %v", code, res)
	}
	if code, res = echo("sk-abc123"); text(res) != "Echo: [REDACTED]" {
		t.Errorf("after the swap the redactor does not run: %d %v", code, res)
	}
}

// Plugins run after user_auth and before headers_from_context: a plugin's
// header write wins over user_auth's, and headers_from_context's over the
// plugin's.
func TestPluginOrderInTheChain(t *testing.T) {
	dir := t.TempDir()
	pluginFiles(t, dir, map[string]string{"tenant.wasm": tenantSrc})
	a, _ := newPluginAPI(t, dir, fmt.Sprintf(`{"mcpServers": {"ordered": {"type": "http", "url": %q,
	    "user_auth": {"users": {"alice": "Bearer alice-cred"}},
	    "headers_from_context": {"headers": {"X-Tenant-Token": "ctx_tenant"}, "on_missing": "passthrough"}}},
	  "mcpInterceptors": [
	    {"kind": "wasm", "path": "./tenant.wasm", "grants": {"secrets": ["auth"]}, "config": {"header": "authorization", "secret": "auth"}},
	    {"kind": "wasm", "path": "./tenant.wasm", "grants": {"secrets": ["tenant"]}}
	  ]}`, testmcp.StartHTTP(t, "http")+"/mcp"))

	_, res, h := a.call("k-alice", "ordered_whoami", `{"secrets": {"auth": "Bearer plugin-cred", "tenant": "t-plugin", "ctx_tenant": "t-ctx"}}`)
	if h["authorization"] != "Bearer plugin-cred" {
		t.Errorf("authorization %q, want the plugin's value over user_auth's (%v)", h["authorization"], res)
	}
	if h["x-tenant-token"] != "t-ctx" {
		t.Errorf("x-tenant-token %q, want headers_from_context's value over the plugin's", h["x-tenant-token"])
	}
	_, _, h = a.call("k-alice", "ordered_whoami", `{"secrets": {"auth": "Bearer plugin-cred", "tenant": "t-plugin"}}`)
	if h["x-tenant-token"] != "t-plugin" {
		t.Errorf("x-tenant-token %q, want the plugin's value when the context sends none", h["x-tenant-token"])
	}
	// user_auth is outside the plugins: its denial comes first.
	code, res, _ := a.call("k-carol", "ordered_whoami", `{}`)
	if code != 200 || res["isError"] != true || !strings.Contains(text(res), "(user id 'carol')") {
		t.Errorf("%d %v, want user_auth's denial before any plugin runs", code, res)
	}
}

// A plugin file replaced while discovery is still contacting servers (after
// the plugin was read) is noticed on the next read, not missed for good.
func TestPluginFileChangedDuringDiscovery(t *testing.T) {
	dir := t.TempDir()
	pluginFiles(t, dir, map[string]string{"policy.wasm": argpolicySrc})
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		<-release
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	a, _ := newPluginAPI(t, dir, fmt.Sprintf(`{"mcpServers": {
	    "http": {"type": "http", "url": %q},
	    "slow": {"type": "http", "url": %q, "session_init_timeout": 60}},
	  "mcpInterceptors": [{"kind": "wasm", "path": "./policy.wasm",
	    "config": {"deny": [{"pattern": "rm -rf", "message": "blocked"}], "patterns": ["sk-[a-z0-9]+"]}}]}`,
		testmcp.StartHTTP(t, "http")+"/mcp", slow.URL+"/mcp"))

	done := make(chan int)
	go func() {
		code, _ := a.as("k-admin").do("GET", "/api/mcp/servers", "")
		done <- code
	}()
	select {
	case <-arrived: // the plugins are loaded; discovery waits on 'slow'
	case <-time.After(2 * time.Minute):
		t.Fatal("discovery never contacted the slow server")
	}
	copyFile(t, plugintest.BuildWasm(t, redactorSrc), filepath.Join(dir, "policy.wasm"))
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("servers: %d", code)
	}
	code, res, _ := a.call("k-alice", "http_echo", `{"arguments": {"message": "rm -rf / sk-abc"}}`)
	if code != 200 || text(res) != "Echo: rm -rf / [REDACTED]" {
		t.Errorf("%d %v: the replaced plugin file was missed", code, res)
	}
}

// The tenant-header logic served as a go-plugin process works through the
// gateway exactly as the Wasm build does.
func TestProcessPluginEndToEnd(t *testing.T) {
	mcpURL := testmcp.StartHTTP(t, "http") + "/mcp"
	dir := t.TempDir()
	bin := filepath.Join(dir, "tenantprocess")
	cmd := exec.Command("go", "build", "-o", bin, "./examples/plugins/tenantprocess")
	cmd.Dir = testmcp.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	a, _ := newPluginAPI(t, dir, fmt.Sprintf(`{"mcpServers": {"crm": {"type": "http", "url": %q}},
		"mcpInterceptors": [{"kind": "process", "path": "./tenantprocess", "grants": {"secrets": ["tenant"]}}]}`, mcpURL))
	_, _, h := a.call("k-alice", "crm_whoami", `{"secrets": {"tenant": "t-proc"}}`)
	if h["x-tenant-token"] != "t-proc" {
		t.Errorf("headers %v, want x-tenant-token from the process plugin", h)
	}
	code, res, _ := a.call("k-alice", "crm_whoami", `{}`)
	denied(t, code, res, tenantDenial)
}

// TestPluginSwapKeepingSizeAndMtime: a plugin file replaced (renamed over)
// by another plugin of the same size with the old mtime set on it is still
// a change: the new plugin runs, the old one no longer does.
func TestPluginSwapKeepingSizeAndMtime(t *testing.T) {
	dir := t.TempDir()
	policy, err := os.ReadFile(plugintest.BuildWasm(t, argpolicySrc))
	if err != nil {
		t.Fatal(err)
	}
	redactor, err := os.ReadFile(plugintest.BuildWasm(t, redactorSrc))
	if err != nil {
		t.Fatal(err)
	}
	size := max(len(policy), len(redactor)) + 64
	path := filepath.Join(dir, "policy.wasm")
	if err := os.WriteFile(path, padWasm(t, policy, size), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	echo := policyEcho(t, dir)
	code, res := echo("rm -rf /")
	denied(t, code, res, "blocked")

	tmp := filepath.Join(dir, "policy.wasm.new")
	if err := os.WriteFile(tmp, padWasm(t, redactor, size), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if code, res = echo("rm -rf /"); code != 200 || res["isError"] == true || text(res) != "Echo: rm -rf /" {
		t.Errorf("after the swap the old policy still runs: %d %v", code, res)
	}
	if code, res = echo("sk-abc123"); text(res) != "Echo: [REDACTED]" {
		t.Errorf("after the swap the redactor does not run: %d %v", code, res)
	}
}

// padWasm appends a custom section to a Wasm module so that it is size
// bytes long.
func padWasm(t *testing.T, b []byte, size int) []byte {
	t.Helper()
	n := size - len(b) // the section's bytes: id, content length, content
	leb := func(v int) []byte {
		var out []byte
		for {
			c := byte(v & 0x7f)
			if v >>= 7; v != 0 {
				out = append(out, c|0x80)
				continue
			}
			return append(out, c)
		}
	}
	for l := 1; l <= 5; l++ {
		content := n - 1 - l
		if content >= 2 && len(leb(content)) == l {
			out := append(append(append([]byte(nil), b...), 0), leb(content)...)
			out = append(out, 1, 'p')
			return append(out, make([]byte, content-2)...)
		}
	}
	t.Fatalf("cannot pad %d bytes to %d", len(b), size)
	return nil
}

// policyEcho serves an HTTP echo server behind ./policy.wasm in dir, with a
// config both the argument policy and the redactor understand (each
// ignores the other's field), and returns alice's echo call.
func policyEcho(t *testing.T, dir string) func(msg string) (int, map[string]any) {
	t.Helper()
	a, _ := newPluginAPI(t, dir, fmt.Sprintf(`{"mcpServers": {"http": {"type": "http", "url": %q}},
	  "mcpInterceptors": [{"kind": "wasm", "path": "./policy.wasm",
	    "config": {"deny": [{"pattern": "rm -rf", "message": "blocked"}], "patterns": ["sk-[a-z0-9]+"]}}]}`,
		testmcp.StartHTTP(t, "http")+"/mcp"))
	echo := func(msg string) (int, map[string]any) {
		code, res, _ := a.call("k-alice", "http_echo", `{"arguments": {"message": "`+msg+`"}}`)
		return code, res
	}
	return echo
}
