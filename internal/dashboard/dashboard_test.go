package dashboard_test

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/dashboard"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// The dashboard is served by the gateway under /ui with the strict CSP and
// nosniff on every answer, the right types for its modules and sheet, and
// nothing outside its own files.
func TestServedWithStrictCSP(t *testing.T) {
	t.Parallel()
	cache := toolcache.New(toolcache.Options{ConfigPath: "/nonexistent/extensions_config.json"})
	t.Cleanup(cache.Close)
	gw := testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)})
	t.Cleanup(gw.Close)
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	const csp = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	for _, tc := range []struct {
		path  string
		code  int
		ctype string
		body  string
	}{
		{"/ui", 200, "text/html", `<script type="module" src="/ui/app.js">`},
		{"/ui/", 200, "text/html", "Antler dashboard"},
		{"/ui/app.js", 200, "text/javascript", "import"},
		{"/ui/api.js", 200, "text/javascript", "export"},
		{"/ui/style.css", 200, "text/css", "body"},
		{"/ui/missing.js", 404, "", ""},
		{"/ui/../healthz", 404, "", ""},
		{"/uix", 404, "", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(b), tc.body) {
				t.Errorf("%d %q %.80q, want %d %q containing %q", resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.code, tc.ctype, tc.body)
			}
			if tc.code == 200 {
				if got := resp.Header.Get("Content-Security-Policy"); got != csp {
					t.Errorf("CSP %q, want %q", got, csp)
				}
				if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
					t.Errorf("X-Content-Type-Options %q", got)
				}
			}
		})
	}
	if dashboard.CSP != csp {
		t.Errorf("dashboard.CSP %q", dashboard.CSP)
	}
}

var scriptTag = regexp.MustCompile(`(?i)<script\b[^>]*>`)

// No asset carries an inline script, an inline style, an event-handler
// attribute, a remote URL (the page works offline and under the CSP) or
// builds markup from strings (everything from the API is untrusted).
func TestAssetsHaveNoInlineCodeOrRemoteURL(t *testing.T) {
	t.Parallel()
	banned := []struct {
		ext  string
		re   *regexp.Regexp
		what string
	}{
		{"", regexp.MustCompile(`(?i)\b(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`), "a remote URL"},
		{".html", regexp.MustCompile(`(?i)<script\b[^>]*>[^<\s]`), "an inline script"},
		{".html", regexp.MustCompile(`(?i)<style\b`), "an inline style sheet"},
		{".html", regexp.MustCompile(`(?i)\sstyle\s*=`), "a style attribute"},
		{".html", regexp.MustCompile(`(?i)\son[a-z]+\s*=`), "an event-handler attribute"},
		{".html", regexp.MustCompile(`(?i)javascript:`), "a javascript: URL"},
		{".js", regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function`), "markup or code built from strings"},
		{".js", regexp.MustCompile(`\.style\.|setAttribute\(\s*['"]style`), "an inline style"},
	}
	n := 0
	err := fs.WalkDir(dashboard.Assets(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := fs.ReadFile(dashboard.Assets(), name)
		if err != nil {
			return err
		}
		for _, rule := range banned {
			if rule.ext != "" && path.Ext(name) != rule.ext {
				continue
			}
			if m := rule.re.Find(b); m != nil {
				t.Errorf("%s has %s: %q", name, rule.what, m)
			}
		}
		for _, tag := range scriptTag.FindAll(b, -1) {
			if !strings.Contains(string(tag), " src=") {
				t.Errorf("%s has a script without src: %q", name, tag)
			}
		}
		return nil
	})
	if err != nil || n < 4 {
		t.Fatalf("walked %d assets: %v", n, err)
	}
}

// The plugins page reads antler_plugin_calls_total and
// antler_plugin_call_duration_seconds from Prometheus text (assets/metrics.js,
// run in Node): calls and failures per plugin, role and carrier, the mean
// latency and the bucket holding the 95th percentile; other series and
// escaped label values do not confuse it.
func TestPluginRowsFromMetrics(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not on PATH")
		}
		t.Skip("node is not on PATH")
	}
	const text = `# HELP antler_plugin_calls_total Plugin calls.
# TYPE antler_plugin_calls_total counter
antler_plugin_calls_total{carrier="wasm",outcome="ok",plugin="mcpInterceptors[0]",role="interceptor"} 8
antler_plugin_calls_total{carrier="wasm",outcome="failed",plugin="mcpInterceptors[0]",role="interceptor"} 2
antler_plugin_calls_total{carrier="process",outcome="ok",plugin="jobs \"x\"",role="driver"} 1
antler_plugin_call_duration_seconds_bucket{carrier="wasm",plugin="mcpInterceptors[0]",role="interceptor",le="0.001"} 5
antler_plugin_call_duration_seconds_bucket{carrier="wasm",plugin="mcpInterceptors[0]",role="interceptor",le="0.01"} 9
antler_plugin_call_duration_seconds_bucket{carrier="wasm",plugin="mcpInterceptors[0]",role="interceptor",le="0.1"} 10
antler_plugin_call_duration_seconds_bucket{carrier="wasm",plugin="mcpInterceptors[0]",role="interceptor",le="+Inf"} 10
antler_plugin_call_duration_seconds_sum{carrier="wasm",plugin="mcpInterceptors[0]",role="interceptor"} 0.05
antler_plugin_call_duration_seconds_count{carrier="wasm",plugin="mcpInterceptors[0]",role="interceptor"} 10
antler_tool_calls_total{door="rest",outcome="ok",server="demo"} 4
`
	dir, err := filepath.Abs("assets")
	if err != nil {
		t.Fatal(err)
	}
	script := `import { parseMetrics, pluginRows } from ` + strconv.Quote("file://"+filepath.Join(dir, "metrics.js")) + `;
let text = ''; for await (const c of process.stdin) text += c;
console.log(JSON.stringify(pluginRows(parseMetrics(text))));`
	cmd := exec.Command("node", "--input-type=module", "-e", script)
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v %s", err, out)
	}
	type row struct {
		Plugin, Role, Carrier string
		Calls, Failures       float64
		Mean, P95             *float64
	}
	var rows []row
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rows) != 2 {
		t.Fatalf("rows %s", out)
	}
	drv, ic := rows[0], rows[1]
	if drv.Plugin != `jobs "x"` || drv.Role != "driver" || drv.Calls != 1 || drv.Failures != 0 || drv.Mean != nil || drv.P95 != nil {
		t.Errorf("driver row %+v", drv)
	}
	if ic.Plugin != "mcpInterceptors[0]" || ic.Carrier != "wasm" || ic.Calls != 10 || ic.Failures != 2 ||
		ic.Mean == nil || *ic.Mean != 0.005 || ic.P95 == nil || *ic.P95 != 0.1 {
		t.Errorf("interceptor row %+v (%s)", ic, out)
	}
}
