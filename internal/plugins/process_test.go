package plugins_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// buildProcess builds the tenant-header process plugin example.
func buildProcess(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tenantprocess")
	cmd := exec.Command("go", "build", "-o", out, "./examples/plugins/tenantprocess")
	cmd.Dir = testmcp.RepoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	return out
}

func TestProcessPluginCrashFailsClosedAndRestarts(t *testing.T) {
	bin := buildProcess(t)
	host, err := plugins.NewHost("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	var (
		mu       sync.Mutex
		observed []string
	)
	host.Observe(func(entry, role, kind string, err error, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		observed = append(observed, fmt.Sprintf("%s %s %s %v", entry, role, kind, err != nil))
	})
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(observed) == 0 {
			return ""
		}
		return observed[len(observed)-1]
	}
	p, err := host.Load(context.Background(), plugins.Entry{Name: "mcpInterceptors[0]", Kind: plugins.KindProcess, Path: bin})
	if err != nil {
		t.Fatal(err)
	}
	if info := p.Info(); info.Major != abi.Major || info.Features&abi.FeatureIntercept == 0 {
		t.Fatalf("info %+v", info)
	}
	call := func() (abi.InterceptResponse, error) {
		req := abi.InterceptRequest{Server: "s", Tool: "s_t", Secrets: []abi.Header{{Name: "tenant", Value: "acme"}}}
		return p.Intercept(context.Background(), "u", &req)
	}
	resp, err := call()
	if err != nil || len(resp.SetHeaders) != 1 || resp.SetHeaders[0].Value != "acme" {
		t.Fatalf("first call: %+v, %v", resp, err)
	}
	if got := last(); got != "mcpInterceptors[0] interceptor process false" {
		t.Errorf("observed %q after a call that succeeded", got)
	}
	pid := p.PID()
	if pid == 0 {
		t.Fatal("no pid")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the killed plugin process to die", func() bool { return dead(pid) })
	if _, err := call(); err == nil {
		t.Fatal("a call to a killed plugin process succeeded")
	}
	if got := last(); got != "mcpInterceptors[0] interceptor process true" {
		t.Errorf("observed %q after a call that failed", got)
	}
	eventually.True(t, "the plugin process to be restarted", func() bool {
		resp, err := call()
		return err == nil && len(resp.SetHeaders) == 1
	})
	if p.PID() == pid || p.PID() == 0 {
		t.Errorf("restarted pid %d, was %d", p.PID(), pid)
	}
	restarted := p.PID()
	p.Close()
	eventually.True(t, fmt.Sprintf("plugin process %d to end on Close", restarted), func() bool { return syscall.Kill(restarted, 0) != nil })
}

// dead says whether process pid has ended: gone, or a zombie its parent
// has not reaped yet.
func dead(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	return len(bytes.TrimSpace(rest)) > 0 && bytes.TrimSpace(rest)[0] == 'Z'
}

func TestProcessPluginWrongHandshakeIsRefused(t *testing.T) {
	host, _ := plugins.NewHost("", nil)
	defer host.Close(context.Background())
	// A binary that is not a plugin (it never prints the handshake line).
	_, err := host.Load(context.Background(), plugins.Entry{Name: "mcpInterceptors[3]", Kind: plugins.KindProcess, Path: "/bin/true"})
	if err == nil {
		t.Fatal("a non-plugin binary was loaded")
	}
	t.Log(err)
}
