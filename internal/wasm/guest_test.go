package wasm_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/wasm"
)

func TestWellBehavedGuest(t *testing.T) {
	t.Parallel()
	m := load(t, "echo", wasm.ModuleOptions{})

	info := m.Info()
	if info.Major != abi.Major {
		t.Errorf("Info().Major = %d, want %d", info.Major, abi.Major)
	}
	if info.Features&abi.FeatureIntercept == 0 {
		t.Errorf("Info().Features = %#x, want the Intercept bit", info.Features)
	}
	if info.Features&abi.FeatureResultHook != 0 {
		t.Errorf("Info().Features = %#x: the echo guest registers no result hook", info.Features)
	}
	if info.Features&^abi.KnownFeatures != 0 {
		t.Errorf("Info().Features = %#x carries unknown bits", info.Features)
	}
	for _, name := range []string{abi.ExportVersion, abi.ExportFeatures, abi.ExportAlloc, abi.ExportIntercept, abi.ExportInitialize} {
		if !slices.Contains(info.Exports, name) {
			t.Errorf("Info().Exports lacks %s: %v", name, info.Exports)
		}
	}
	if info.Size == 0 || len(info.SHA256) != 64 {
		t.Errorf("Info() size %d, sha256 %q", info.Size, info.SHA256)
	}
	t.Logf("echo guest: ABI %d.%d, features %#x, %d bytes, imports %v", info.Major, info.Minor, info.Features, info.Size, info.Imports)

	req := &abi.InterceptRequest{
		Server:    "github",
		Tool:      "search_issues",
		Arguments: []byte(`{"q":"is:open"}`),
		Headers:   []abi.Header{{Name: "Authorization", Value: "Bearer x"}},
		UserID:    "alice",
		ThreadID:  "thread-1",
		Config:    []byte(`{"k":1}`),
	}
	for i := 1; i <= 3; i++ {
		resp, err := intercept(context.Background(), m, "alice", req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Action != abi.ActionContinue || resp.Error != "" || resp.Message != "" {
			t.Fatalf("answer %+v, want a plain continue", resp)
		}
		for name, want := range map[string]string{
			"X-Seen-Tool": "search_issues", "X-Echo-Id": "thread-1", "X-User": "alice",
			"X-Config": `{"k":1}`, "X-Count": strconv.Itoa(i),
		} {
			if got := header(resp, name); got != want {
				t.Errorf("call %d: %s = %q, want %q", i, name, got, want)
			}
		}
		if string(resp.Arguments) != `{"q":"is:open"}` {
			t.Errorf("call %d: arguments %q", i, resp.Arguments)
		}
	}

	// The same guest through the plugin layer.
	p := loadPlugin(t, "echo", plugins.Entry{Config: []byte(`{"via":"plugins"}`)})
	if !p.HasIntercept() || p.HasResultHook() {
		t.Errorf("HasIntercept %v, HasResultHook %v", p.HasIntercept(), p.HasResultHook())
	}
	resp, err := p.Intercept(context.Background(), "bob", &abi.InterceptRequest{Tool: "t1", UserID: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if header(resp, "X-Seen-Tool") != "t1" || header(resp, "X-Config") != `{"via":"plugins"}` {
		t.Errorf("plugin answer %+v", resp.SetHeaders)
	}
}

// TestConcurrentCallsNoCrossTalk runs 1,000 concurrent calls across three
// modules of four instances each: every answer must be its own request's.
func TestConcurrentCallsNoCrossTalk(t *testing.T) {
	const (
		modules = 3
		calls   = 1000
		pool    = 4
	)
	ms := make([]*wasm.Module, modules)
	for i := range ms {
		ms[i] = load(t, "echo", wasm.ModuleOptions{
			Name:     fmt.Sprintf("echo-%d", i),
			PoolSize: pool,
			Timeout:  10 * time.Second, // the race detector and 1,000 goroutines on few CPUs
			Grants:   wasm.Grants{Random: true},
		})
	}

	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		instances = make([]map[string]int, modules)
		failures  []string
	)
	for i := range instances {
		instances[i] = map[string]int{}
	}
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	start := make(chan struct{})
	for n := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := n % modules
			id := fmt.Sprintf("req-%04d", n)
			args := fmt.Sprintf(`{"n":%d,"pad":"%0*d"}`, n, n%97, 0) // varying lengths
			req := &abi.InterceptRequest{
				Tool:      "tool-" + id,
				ThreadID:  id,
				UserID:    "user-" + strconv.Itoa(n%7),
				Arguments: []byte(args),
				Config:    []byte(fmt.Sprintf(`{"module":%d}`, k)),
			}
			<-start
			resp, err := intercept(context.Background(), ms[k], req.UserID, req)
			if err != nil {
				fail("%s: %v", id, err)
				return
			}
			if got := header(resp, "X-Echo-Id"); got != id {
				fail("%s: X-Echo-Id %q", id, got)
			}
			if got := header(resp, "X-Seen-Tool"); got != "tool-"+id {
				fail("%s: X-Seen-Tool %q", id, got)
			}
			if got := header(resp, "X-User"); got != req.UserID {
				fail("%s: X-User %q, want %q", id, got, req.UserID)
			}
			if got := header(resp, "X-Config"); got != string(req.Config) {
				fail("%s: X-Config %q, want %q", id, got, req.Config)
			}
			if string(resp.Arguments) != args {
				fail("%s: arguments %q, want %q", id, resp.Arguments, args)
			}
			mu.Lock()
			instances[k][header(resp, "X-Instance")]++
			mu.Unlock()
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)
	for i, f := range failures {
		if i == 20 {
			t.Errorf("… and %d more", len(failures)-20)
			break
		}
		t.Error(f)
	}
	for k, seen := range instances {
		// Each instance draws its id from the granted random source: at
		// most PoolSize distinct ids means the pool bound held.
		if len(seen) == 0 || len(seen) > pool {
			t.Errorf("module %d was served by %d instances, want 1..%d: %v", k, len(seen), pool, seen)
		}
		t.Logf("module %d: %d instances served %v calls", k, len(seen), seen)
	}
	t.Logf("%d calls across %d modules in %v", calls, modules, elapsed)
}

func TestPerUserIsolation(t *testing.T) {
	t.Parallel()
	t.Run("per_user", func(t *testing.T) {
		m := load(t, "echo", wasm.ModuleOptions{Name: "echo-per-user", PerUser: true, Grants: wasm.Grants{Random: true}})
		for i := 1; i <= 3; i++ {
			if got := header(call(t, m, "alice", "t"), "X-Count"); got != strconv.Itoa(i) {
				t.Fatalf("alice's call %d: count %s", i, got)
			}
		}
		b := call(t, m, "bob", "t")
		if got := header(b, "X-Count"); got != "1" {
			t.Errorf("bob's first call: count %s, want 1 (his own instance)", got)
		}
		a := call(t, m, "alice", "t")
		if got := header(a, "X-Count"); got != "4" {
			t.Errorf("alice's fourth call: count %s, want 4 (bob's call must not touch her instance)", got)
		}
		if header(a, "X-Instance") == header(b, "X-Instance") {
			t.Errorf("alice and bob share instance %s", header(a, "X-Instance"))
		}
	})
	t.Run("shared", func(t *testing.T) {
		m := load(t, "echo", wasm.ModuleOptions{Name: "echo-shared"})
		for i := 1; i <= 3; i++ {
			if got := header(call(t, m, "alice", "t"), "X-Count"); got != strconv.Itoa(i) {
				t.Fatalf("alice's call %d: count %s", i, got)
			}
		}
		// Sequential calls reuse the one idle instance, whoever the user.
		if got := header(call(t, m, "bob", "t"), "X-Count"); got != "4" {
			t.Errorf("bob's call on a shared module: count %s, want 4", got)
		}
	})
}

func TestGrants(t *testing.T) {
	t.Parallel()
	year := time.Now().Year()
	// Two modules per setting: each serves its first call from its own fresh
	// instance, so the pair shows whether fresh instances see the same
	// random stream.
	fresh := func(grants wasm.Grants) [2]abi.InterceptResponse {
		var out [2]abi.InterceptResponse
		for i := range out {
			m := load(t, "grants", wasm.ModuleOptions{Name: fmt.Sprintf("grants-%v-%d", grants, i), Grants: grants})
			out[i] = call(t, m, "", "t")
		}
		return out
	}

	none := fresh(wasm.Grants{})
	all := fresh(wasm.Grants{Clock: true, Random: true})
	for _, r := range append(none[:], all[:]...) {
		t.Logf("year %s unix %s since-init %s crypto/rand %s math/rand %s", header(r, "X-Year"), header(r, "X-Unix"),
			header(r, "X-Since-Init"), header(r, "X-Crypto-Rand"), header(r, "X-Math-Rand"))
	}

	if got := header(none[0], "X-Year"); got != "2022" {
		t.Errorf("without the clock grant the guest saw year %s, want wazero's fake 2022", got)
	}
	if got := header(all[0], "X-Year"); got != strconv.Itoa(year) && got != strconv.Itoa(year+1) {
		t.Errorf("with the clock grant the guest saw year %s, want %d", got, year)
	}
	if unix, _ := strconv.ParseInt(header(all[0], "X-Unix"), 10, 64); time.Since(time.Unix(unix, 0)).Abs() > time.Minute {
		t.Errorf("with the clock grant the guest's time is %s", time.Unix(unix, 0))
	}

	for _, name := range []string{"X-Crypto-Rand", "X-Math-Rand"} {
		if a, b := header(none[0], name), header(none[1], name); a == "" || a != b {
			t.Errorf("without the random grant two fresh instances gave %s %q and %q, want the same deterministic value", name, a, b)
		}
		if a, b := header(all[0], name), header(all[1], name); a == "" || a == b {
			t.Errorf("with the random grant two fresh instances gave %s %q and %q, want different values", name, a, b)
		}
	}
}

func TestCompilationCacheDir(t *testing.T) {
	t.Parallel()
	code := guestCode(t, "echo")
	dir := t.TempDir()
	loadIn := func() time.Duration {
		rt, err := wasm.NewRuntime(wasm.RuntimeOptions{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(context.Background())
		began := time.Now()
		m, err := rt.Load(context.Background(), code, wasm.ModuleOptions{Name: "echo"})
		took := time.Since(began)
		if err != nil {
			t.Fatal(err)
		}
		if got := header(call(t, m, "", "cached"), "X-Seen-Tool"); got != "cached" {
			t.Errorf("X-Seen-Tool %q", got)
		}
		return took
	}
	cold := loadIn()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("the cache dir is empty after a compile (%v)", err)
	}
	warm := loadIn()
	t.Logf("Load of a %d-byte guest: cold compile %v, from the cache dir %v", len(code), cold, warm)
}
