package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// draft07 is the $schema server-everything writes in every input schema.
const draft07 = "http://json-schema.org/draft-07/schema#"

// TestEverything drives the official server-everything (pinned in
// testdata/npm) through the gateway's HTTP API, over stdio and over
// streamable HTTP. It is skipped when the npm packages are not installed,
// and fails instead under CI=true.
func TestEverything(t *testing.T) {
	index := testnpm.Everything(t)
	transports := []struct {
		name   string
		server func(t *testing.T) map[string]any
	}{
		{"stdio", func(t *testing.T) map[string]any {
			return map[string]any{"command": "node", "args": []string{index}}
		}},
		{"http", func(t *testing.T) map[string]any {
			return map[string]any{"type": "http", "url": testnpm.StartEverythingHTTP(t)}
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := tr.server(t)
			srv["tool_call_timeout"] = 1
			testEverything(t, tr.name, srv)
		})
	}
}

// everythingTool is the part of a listed tool this test reads.
type everythingTool struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	OriginalName string          `json:"original_name"`
	InputSchema  json.RawMessage `json:"input_schema"`
}

// everythingResult is a CallToolResult as the gateway returns it.
type everythingResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError           *bool           `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

func (r everythingResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

type everythingServerStatus struct {
	Name            string `json:"name"`
	Transport       string `json:"transport"`
	State           string `json:"state"`
	Error           string `json:"error"`
	Tools           int    `json:"tools"`
	ProtocolVersion string `json:"protocol_version"`
	Sessions        int    `json:"sessions"`
}

// stdioChildren lists this test process's child processes running
// server-everything over stdio (its pooled sessions).
func stdioChildren() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err1 := os.ReadFile("/proc/" + e.Name() + "/stat")
		cmdline, err2 := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err1 != nil || err2 != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		args := string(cmdline)
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) &&
			strings.Contains(args, "server-everything") && !strings.Contains(args, "streamableHttp") {
			out = append(out, pid)
		}
	}
	return out
}

func testEverything(t *testing.T, transport string, server map[string]any) {
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": server}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path})
	t.Cleanup(cache.Close)
	ts := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler())
	t.Cleanup(ts.Close)
	api := everythingAPI{t: t, base: ts.URL, client: recorded(ts.Client())}

	// Tools: prefixed names, schemas as the server wrote them.
	var list struct {
		Tools []everythingTool `json:"tools"`
	}
	api.get("/api/mcp/tools", &list)
	byName := map[string]everythingTool{}
	for _, tool := range list.Tools {
		byName[tool.Name] = tool
	}
	for _, want := range []string{"echo", "get-sum", "get-structured-content", "trigger-long-running-operation"} {
		tool, ok := byName["everything_"+want]
		if !ok {
			t.Errorf("GET /api/mcp/tools: no everything_%s among %d tools", want, len(list.Tools))
			continue
		}
		if tool.Server != "everything" || tool.OriginalName != want {
			t.Errorf("everything_%s: server %q, original_name %q; want everything, %s", want, tool.Server, tool.OriginalName, want)
		}
	}
	withSchema := 0
	for _, tool := range list.Tools {
		var schema map[string]json.RawMessage
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			t.Errorf("%s: input_schema is not a JSON object: %v: %s", tool.Name, err, tool.InputSchema)
			continue
		}
		raw, ok := schema["$schema"]
		if !ok {
			continue
		}
		var got string
		if err := json.Unmarshal(raw, &got); err != nil || got != draft07 {
			t.Errorf("%s: input_schema $schema = %s; want %q", tool.Name, raw, draft07)
			continue
		}
		withSchema++
	}
	if withSchema == 0 {
		t.Errorf("no tool's input_schema kept \"$schema\": %q (the server sends it in every one)", draft07)
	}
	t.Logf("%s: %d tools, %d with $schema %s", transport, len(list.Tools), withSchema, draft07)

	// Server status.
	before := api.server()
	if before.State != toolcache.StateConnected || before.ProtocolVersion == "" || before.Tools == 0 {
		t.Errorf("GET /api/mcp/servers: everything = %+v; want connected, a protocol_version and tools > 0", before)
	}
	// A plain call.
	api.wantSum("before the timeout")
	var children []int
	if transport == "stdio" {
		children = stdioChildren()
		if len(children) != 1 {
			t.Errorf("stdio server processes after the first call: %v, want one pooled session", children)
		}
	}

	// Structured content arrives as an object, not as a string.
	res := api.call("get-structured-content", `{"arguments":{"location":"Chicago"}}`)
	if res.IsError != nil && *res.IsError {
		t.Errorf("get-structured-content: isError: %s", res.text())
	}
	var weather map[string]json.RawMessage
	if err := json.Unmarshal(res.StructuredContent, &weather); err != nil {
		t.Errorf("get-structured-content: structuredContent is not a JSON object: %v: %s", err, res.StructuredContent)
	}
	for _, k := range []string{"temperature", "conditions", "humidity"} {
		if _, ok := weather[k]; !ok && weather != nil {
			t.Errorf("get-structured-content: structuredContent has no %q: %s", k, res.StructuredContent)
		}
	}

	// A call longer than tool_call_timeout (1s) is a tool error, not an HTTP one.
	start := time.Now()
	res = api.call("trigger-long-running-operation", `{"arguments":{"duration":3,"steps":3}}`)
	elapsed := time.Since(start)
	t.Logf("%s: trigger-long-running-operation returned after %s: %s", transport, elapsed.Round(time.Millisecond), res.text())
	if res.IsError == nil || !*res.IsError {
		t.Errorf("trigger-long-running-operation (3s, timeout 1s): isError not true: %s", res.text())
	}
	if !strings.Contains(res.text(), "timed out") {
		t.Errorf("trigger-long-running-operation: text %q does not mention the timeout", res.text())
	}
	if elapsed >= 3*time.Second {
		t.Errorf("trigger-long-running-operation took %s; the 1s tool_call_timeout did not end it", elapsed)
	}

	// The session survived: at once, and after the abandoned operation's own
	// end, when a late result or progress may still arrive on the connection.
	api.wantSum("right after the timeout")
	if wait := time.Until(start.Add(3500 * time.Millisecond)); wait > 0 {
		time.Sleep(wait)
	}
	api.wantSum("after the abandoned operation ended")

	after := api.server()
	if after.State != toolcache.StateConnected {
		t.Errorf("GET /api/mcp/servers after the timeout: everything = %+v; want connected", after)
	}
	if transport == "stdio" {
		if now := stdioChildren(); !slices.Equal(now, children) {
			t.Errorf("stdio server processes went from %v to %v: the timeout cost the session", children, now)
		}
		if after.Sessions != 1 {
			t.Errorf("sessions = %d, want the one pooled session", after.Sessions)
		}
	}
}

// everythingAPI calls the gateway under test.
type everythingAPI struct {
	t      *testing.T
	base   string
	client *http.Client
}

// do sends a request and decodes a 200 JSON answer into out.
func (a everythingAPI) do(method, path, body string, out any) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("%s %s: status %d: %s", method, path, resp.StatusCode, data)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(out); err != nil {
		a.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
	}
}

func (a everythingAPI) get(path string, out any) {
	a.t.Helper()
	a.do(http.MethodGet, path, "", out)
}

// call calls everything_<tool> with body and returns the result (status 200).
func (a everythingAPI) call(tool, body string) everythingResult {
	a.t.Helper()
	var res everythingResult
	a.do(http.MethodPost, "/api/mcp/tools/everything_"+tool+"/call", body, &res)
	return res
}

// wantSum checks that get-sum answers 2+3 correctly.
func (a everythingAPI) wantSum(when string) {
	a.t.Helper()
	res := a.call("get-sum", `{"arguments":{"a":2,"b":3}}`)
	if res.IsError != nil && *res.IsError {
		a.t.Errorf("get-sum %s: isError: %s", when, res.text())
	}
	if !strings.Contains(res.text(), "5") {
		a.t.Errorf("get-sum %s: text %q does not contain 5", when, res.text())
	}
}

// server returns the everything server's entry of GET /api/mcp/servers.
func (a everythingAPI) server() everythingServerStatus {
	a.t.Helper()
	var body struct {
		Servers []everythingServerStatus `json:"servers"`
	}
	a.get("/api/mcp/servers", &body)
	for _, s := range body.Servers {
		if s.Name == "everything" {
			return s
		}
	}
	a.t.Fatalf("GET /api/mcp/servers: no server named everything in %+v", body.Servers)
	return everythingServerStatus{}
}
