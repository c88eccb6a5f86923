package plugins_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/guest"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/plugins/plugintest"
	"github.com/antler-mcp/antler/sdk"
)

// benchRequest is a tool call whose encoded InterceptRequest is 1 KiB
// (1,024 bytes), carrying the secret the tenantheader example sends.
func benchRequest(tb testing.TB) *abi.InterceptRequest {
	req := &abi.InterceptRequest{
		Server:       "github",
		Transport:    "streamable-http",
		Tool:         "github__search_issues",
		OriginalTool: "search_issues",
		Headers: []abi.Header{
			{Name: "User-Agent", Value: "deerflow/2.3"},
			{Name: "Accept", Value: "application/json"},
		},
		UserID:      "user-8c1f0e",
		ThreadID:    "thread-5d2a77",
		SecretNames: []string{"tenant", "github_token"},
		Secrets:     []abi.Header{{Name: "tenant", Value: "tnt_9f8e7d6c5b4a39281706"}},
	}
	var enc abi.Encoder
	for pad := 0; ; pad++ {
		req.Arguments = []byte(`{"query":"repo:antler-mcp/antler is:open label:bug","per_page":50,"note":"` + strings.Repeat("x", pad) + `"}`)
		enc.Reset()
		req.Encode(&enc)
		if n := len(enc.Bytes()); n >= 1024 {
			if n != 1024 {
				tb.Fatalf("the request encodes to %d bytes", n)
			}
			return req
		}
	}
}

// tenantSettings and nativeTenantHeader are the tenantheader example's
// logic as a plain Go function, for comparison with the Wasm build.
type tenantSettings struct {
	Header string `json:"header"`
	Secret string `json:"secret"`
}

var nativeParsed struct {
	raw string
	s   tenantSettings
}

func nativeTenantHeader(req *abi.InterceptRequest) abi.InterceptResponse {
	if nativeParsed.raw != string(req.Config) || nativeParsed.s.Header == "" {
		s := tenantSettings{Header: "X-Tenant-Token", Secret: "tenant"}
		if len(req.Config) > 0 {
			_ = json.Unmarshal(req.Config, &s)
		}
		nativeParsed.raw, nativeParsed.s = string(req.Config), s
	}
	s := nativeParsed.s
	value := sdk.Secret(req, s.Secret)
	if value == "" {
		return sdk.Deny("This tool needs your tenant token: send it as the '" + s.Secret + "' secret.")
	}
	return sdk.SetHeader(sdk.Continue(), s.Header, value)
}

func checkTenant(b *testing.B, resp abi.InterceptResponse) {
	if len(resp.SetHeaders) != 1 || resp.SetHeaders[0].Name != "X-Tenant-Token" || resp.SetHeaders[0].Value != "tnt_9f8e7d6c5b4a39281706" {
		b.Fatalf("answer %+v", resp)
	}
}

// BenchmarkInterceptor compares the tenantheader interceptor run natively
// with the same logic run as a Wasm plugin, on a 1 KiB request:
//
//	native        the handler called on the decoded request
//	native-codec  plus what the Wasm path adds in messages: encode the
//	              request, decode it (guest.Dispatcher, as a guest does), encode
//	              the answer and decode it on the host side
//	wasm          plugins.Plugin.Intercept through the real example guest
func BenchmarkInterceptor(b *testing.B) {
	req := benchRequest(b)
	b.Run("native", func(b *testing.B) {
		b.SetBytes(1024)
		b.ReportAllocs()
		var resp abi.InterceptResponse
		for b.Loop() {
			resp = nativeTenantHeader(req)
		}
		checkTenant(b, resp)
	})
	b.Run("native-codec", func(b *testing.B) {
		sdk.HandleIntercept(nativeTenantHeader)
		defer sdk.HandleIntercept(nil)
		var (
			d    guest.Dispatcher
			enc  abi.Encoder
			resp abi.InterceptResponse
		)
		b.SetBytes(1024)
		b.ReportAllocs()
		for b.Loop() {
			enc.Reset()
			req.Encode(&enc)
			out := append([]byte(nil), d.Intercept(enc.Bytes())...) // the host copies the answer out
			if err := resp.Decode(out); err != nil {
				b.Fatal(err)
			}
		}
		checkTenant(b, resp)
	})
	b.Run("wasm", func(b *testing.B) {
		p := plugintest.Load(b, "../../examples/plugins/tenantheader", plugins.Entry{
			Name:   "tenantheader",
			Grants: plugins.Grants{Secrets: []string{"tenant"}},
		})
		ctx := context.Background()
		var resp abi.InterceptResponse
		var err error
		b.SetBytes(1024)
		b.ReportAllocs()
		for b.Loop() {
			resp, err = p.Intercept(ctx, "user-8c1f0e", req)
			if err != nil {
				b.Fatal(err)
			}
		}
		checkTenant(b, resp)
	})
	// The same request through the two other carriers: the tenant-header
	// logic served as a go-plugin process, and an Extism-style module.
	for _, carrier := range []struct {
		name string
		load func(b *testing.B) plugins.Entry
	}{
		{"process", func(b *testing.B) plugins.Entry {
			return plugins.Entry{Kind: plugins.KindProcess, Path: buildProcessB(b)}
		}},
		{"extism", func(b *testing.B) plugins.Entry {
			return plugins.Entry{Kind: plugins.KindExtism, Path: plugintest.BuildWasm(b, "testdata/extismguest")}
		}},
	} {
		b.Run(carrier.name, func(b *testing.B) {
			e := carrier.load(b)
			e.Name, e.Grants = carrier.name, plugins.Grants{Secrets: []string{"tenant"}}
			host, err := plugins.NewHost("", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer host.Close(context.Background())
			p, err := host.Load(context.Background(), e)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			var resp abi.InterceptResponse
			b.SetBytes(1024)
			b.ReportAllocs()
			for b.Loop() {
				if resp, err = p.Intercept(ctx, "user-8c1f0e", req); err != nil {
					b.Fatal(err)
				}
			}
			checkTenant(b, resp)
		})
	}
}

// buildProcessB builds the tenant-header process plugin.
func buildProcessB(b *testing.B) string {
	out := filepath.Join(b.TempDir(), "tenantprocess")
	cmd := exec.Command("go", "build", "-o", out, "./examples/plugins/tenantprocess")
	cmd.Dir = testmcp.RepoRoot(b)
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, o)
	}
	return out
}
