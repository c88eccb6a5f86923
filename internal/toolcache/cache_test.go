package toolcache_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// bundle is a temp config file, a private environment and a cache over them.
type bundle struct {
	t     *testing.T
	path  string
	env   sync.Map // variable name → value, for $VAR references
	cache *toolcache.Cache
}

func newBundle(t *testing.T, doc string) *bundle {
	t.Helper()
	b := &bundle{t: t, path: filepath.Join(t.TempDir(), "extensions_config.json")}
	b.write(doc)
	b.cache = toolcache.New(toolcache.Options{ConfigPath: b.path, Lookup: func(name string) (string, bool) {
		v, ok := b.env.Load(name)
		if !ok {
			return "", false
		}
		return v.(string), true
	}})
	t.Cleanup(b.cache.Close)
	return b
}

func (b *bundle) write(doc string) {
	b.t.Helper()
	if err := os.WriteFile(b.path, []byte(doc), 0o600); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bundle) snap() *toolcache.ToolSet {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := b.cache.ToolSet(ctx)
	if err != nil {
		b.t.Fatalf("snapshot: %v", err)
	}
	return s
}

func toolNames(s *toolcache.ToolSet) []string {
	var names []string
	for _, t := range s.Tools {
		names = append(names, t.Name)
	}
	return names
}

func status(t *testing.T, s *toolcache.ToolSet, name string) toolcache.ServerStatus {
	t.Helper()
	for _, st := range s.ServerStatuses() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for server %q", name)
	return toolcache.ServerStatus{}
}

// stdio returns a server entry running the demo binary.
func stdio(bin string, extra string, args ...string) string {
	a, _ := json.Marshal(args)
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"command": %q, "args": %s%s}`, bin, a, extra)
}

// wireLogEnv is the config fragment that has the demo server log its first
// protocol lines to path, so a test can see when a request has arrived.
func wireLogEnv(path string) string {
	return fmt.Sprintf(`"env": {"ANTLER_DEMO_WIRELOG": %q}`, path)
}

// initializeArrived says whether the demo server behind the wire log at
// path has read an initialize request: discovery is under way.
func initializeArrived(path string) bool {
	b, _ := os.ReadFile(path)
	return strings.Contains(string(b), `"initialize"`)
}

func doc(servers ...string) string {
	return `{"mcpServers": {` + strings.Join(servers, ",") + `}, "skills": {}}`
}

// identity is what the demo server's whoami tool reports.
type identity struct {
	PID int               `json:"pid"`
	Cwd string            `json:"cwd"`
	Env map[string]string `json:"env"`
}

// whoamiAs calls a whoami tool for a user's thread.
func whoamiAs(t *testing.T, s *toolcache.ToolSet, tool, user, thread string) identity {
	t.Helper()
	raw, err := s.Invoke(context.Background(), dispatch.Request{Name: tool, Arguments: json.RawMessage(`{}`), UserID: user, ThreadID: thread})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var res struct {
		StructuredContent identity `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res.StructuredContent
}

// whoami calls a whoami tool as the default user and thread and returns the pid.
func whoami(t *testing.T, s *toolcache.ToolSet, tool string) int {
	t.Helper()
	return whoamiAs(t, s, tool, "", "").PID
}

func TestDiscoveryServesHealthyServersAndReportsFailures(t *testing.T) {
	bin := testmcp.Build(t)
	httpURL := testmcp.StartHTTP(t, "http")
	sseURL := testmcp.StartHTTP(t, "sse")
	b := newBundle(t, doc(
		`"local": `+stdio(bin, ""),
		`"remote": {"type": "http", "url": "`+httpURL+`/mcp"}`,
		`"legacy": {"transport": "sse", "url": "`+sseURL+`/sse"}`,
		`"missing": {"command": "/nonexistent/antler-no-such-binary"}`,
		`"weird": {"type": "carrier-pigeon", "url": "x"}`,
		`"off": {"enabled": false, "command": "/nonexistent"}`,
	))
	s := b.snap()
	for _, server := range []string{"local", "remote", "legacy"} {
		st := status(t, s, server)
		if st.State != toolcache.StateConnected || st.Tools != 8 || st.ProtocolVersion == "" {
			t.Errorf("%s: got %+v, want connected with 8 tools and a protocol version", server, st)
		}
		if _, ok := s.Tool(server + "_echo"); !ok {
			t.Errorf("%s_echo missing from %v", server, toolNames(s))
		}
	}
	if st := status(t, s, "missing"); st.State != toolcache.StateFailed || st.Error == "" {
		t.Errorf("missing: %+v, want failed with a reason", st)
	}
	if st := status(t, s, "weird"); st.State != toolcache.StateFailed || !strings.Contains(st.Error, "unsupported transport type") {
		t.Errorf("weird: %+v, want failed for the transport", st)
	}
	for _, st := range s.Servers {
		if st.Name == "off" {
			t.Errorf("disabled server reported: %+v", st)
		}
	}
	// Config order: local's tools come first, then remote's, then legacy's.
	if got := s.Tools[0].Server; got != "local" {
		t.Errorf("first tool from %s, want local", got)
	}
	raw, err := s.Call(context.Background(), "legacy_add", json.RawMessage(`{"a":2,"b":40}`))
	if err != nil || !strings.Contains(string(raw), `"sum":42`) {
		t.Fatalf("legacy_add over SSE: %s, %v", raw, err)
	}
}

func TestSchemasPassThroughUnchanged(t *testing.T) {
	b := newBundle(t, doc(`"demo": `+stdio(testmcp.Build(t), "")))
	tool, ok := b.snap().Tool("demo_schema_probe")
	if !ok {
		t.Fatal("demo_schema_probe missing")
	}
	var schema map[string]any
	if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"$schema", "oneOf", "description", "minProperties", "additionalProperties"} {
		if _, ok := schema[key]; !ok {
			t.Errorf("schema lost %q: %s", key, tool.InputSchema)
		}
	}
}

func TestNameCollisionKeepsFirstInConfigOrder(t *testing.T) {
	bin := testmcp.Build(t)
	b := newBundle(t, doc(
		`"first": `+stdio(bin, `"tool_name_prefix": false, "env": {"ANTLER_DEMO_ID": "first"}`),
		`"second": `+stdio(bin, `"tool_name_prefix": false, "env": {"ANTLER_DEMO_ID": "second"}`, "-tools", "only_second"),
	))
	s := b.snap()
	second := status(t, s, "second")
	if len(second.Conflicts) != 8 {
		t.Fatalf("second conflicts = %+v, want all 8 shared tools", second.Conflicts)
	}
	if c := second.Conflicts[0]; c.KeptFrom != "first" {
		t.Errorf("conflict %+v, want kept_from first", c)
	}
	if tool, _ := s.Tool("only_second"); tool.Server != "second" {
		t.Errorf("only_second routed to %q", tool.Server)
	}
	if got := whoamiAs(t, s, "whoami", "", "").Env["ANTLER_DEMO_ID"]; got != "first" {
		t.Errorf("whoami answered by server %q, want first", got)
	}
}

func TestCallsRouteByServerNeverByPrefix(t *testing.T) {
	bin := testmcp.Build(t)
	// "web" and "web_scraper" overlap as prefixes; each call must reach its own server.
	b := newBundle(t, doc(`"web": `+stdio(bin, `"env": {"ANTLER_DEMO_ID": "web"}`), `"web_scraper": `+stdio(bin, `"env": {"ANTLER_DEMO_ID": "web_scraper"}`)))
	s := b.snap()
	for _, server := range []string{"web", "web_scraper"} {
		if got := whoamiAs(t, s, server+"_whoami", "", "").Env["ANTLER_DEMO_ID"]; got != server {
			t.Errorf("%s_whoami answered by server %q", server, got)
		}
	}
}

func TestSameSizeEditWithOldMtimeIsNoticed(t *testing.T) {
	bin := testmcp.Build(t)
	b := newBundle(t, doc(`"a": `+stdio(bin, "", "-tools", "alpha1")))
	st, _ := os.Stat(b.path)
	if _, ok := b.snap().Tool("a_alpha1"); !ok {
		t.Fatal("a_alpha1 missing")
	}
	b.write(doc(`"a": ` + stdio(bin, "", "-tools", "alpha2")))
	if err := os.Chtimes(b.path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.Stat(b.path); now.Size() != st.Size() || !now.ModTime().Equal(st.ModTime()) {
		t.Fatal("test setup: size or mtime differ")
	}
	s := b.snap()
	if _, ok := s.Tool("a_alpha2"); !ok {
		t.Errorf("edit not noticed: tools %v", toolNames(s))
	}
	if _, ok := s.Tool("a_alpha1"); ok {
		t.Error("old tool still served")
	}
}

func TestSkillsOnlyEditKeepsConnections(t *testing.T) {
	bin := testmcp.Build(t)
	server := `"a": ` + stdio(bin, "")
	b := newBundle(t, `{"mcpServers": {`+server+`}, "skills": {}}`)
	s1 := b.snap()
	pid := whoami(t, s1, "a_whoami")
	b.write(`{"mcpServers": {` + server + `}, "skills": {"writing": {"enabled": false}}, "middlewares": ["x:y"]}`)
	s2 := b.snap()
	if s2 != s1 {
		t.Error("a skills-only edit rebuilt the tool set")
	}
	if got := whoami(t, s2, "a_whoami"); got != pid {
		t.Errorf("stdio child restarted: pid %d, was %d", got, pid)
	}
	// A real MCP edit does rebuild.
	b.write(`{"mcpServers": {"a": ` + stdio(bin, `"description": "changed"`) + `}}`)
	b.write(`{"mcpServers": {"a": ` + stdio(bin, "", "-tools", "extra") + `}}`)
	if s3 := b.snap(); s3 == s1 || whoami(t, s3, "a_whoami") == pid {
		t.Error("an MCP edit did not rebuild and restart the server")
	}
}

func TestDeletedConfigKeepsLastKnownGood(t *testing.T) {
	b := newBundle(t, doc(`"a": `+stdio(testmcp.Build(t), "")))
	s1 := b.snap()
	if err := os.Remove(b.path); err != nil {
		t.Fatal(err)
	}
	s2 := b.snap()
	if s2 != s1 {
		t.Fatal("deleting the config rebuilt the tools")
	}
	if _, err := s2.Call(context.Background(), "a_echo", json.RawMessage(`{"message":"still here"}`)); err != nil {
		t.Fatalf("call after delete: %v", err)
	}
}

func TestBrokenEditKeepsLastKnownGoodUntilFixed(t *testing.T) {
	bin := testmcp.Build(t)
	b := newBundle(t, doc(`"a": `+stdio(bin, "")))
	s1 := b.snap()
	b.write(`{"mcpServers": {"a": {"command": 42}}}`)
	if s2 := b.snap(); s2 != s1 {
		t.Fatal("a broken edit replaced the tools")
	}
	b.write(doc(`"a": ` + stdio(bin, "", "-tools", "fixed")))
	if _, ok := b.snap().Tool("a_fixed"); !ok {
		t.Fatal("the fixed config was not picked up")
	}
}

func TestResetDuringDiscoveryNeverPublishesTheOldResult(t *testing.T) {
	bin := testmcp.Build(t)
	// The file never changes: only the generation number can tell the
	// superseded discovery from the new one.
	wire := filepath.Join(t.TempDir(), "wire.log")
	b := newBundle(t, doc(`"slow": `+stdio(bin, wireLogEnv(wire), "-init-delay", "1500ms", "-tools", "$DEMO_TOOLS")))
	b.env.Store("DEMO_TOOLS", "old_tool")
	type result struct {
		s   *toolcache.ToolSet
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := b.cache.ToolSet(context.Background())
		done <- result{s, err}
	}()
	eventually.True(t, "discovery of the slow server to be under way", func() bool { return initializeArrived(wire) })
	b.env.Store("DEMO_TOOLS", "new_tool")
	b.cache.Reset()
	r := <-done
	if r.err != nil {
		t.Fatalf("snapshot: %v", r.err)
	}
	if _, ok := r.s.Tool("slow_old_tool"); ok {
		t.Fatal("the discovery that a reset superseded was published")
	}
	if _, ok := r.s.Tool("slow_new_tool"); !ok {
		t.Fatalf("tools %v, want the new config's", toolNames(r.s))
	}
	if s := b.snap(); s != r.s {
		t.Error("a later read rebuilt again")
	}
}

func TestEditDuringDiscoveryIsNotPublishedUnderTheNewSignature(t *testing.T) {
	bin := testmcp.Build(t)
	wire := filepath.Join(t.TempDir(), "wire.log")
	b := newBundle(t, doc(`"slow": `+stdio(bin, wireLogEnv(wire), "-init-delay", "1500ms", "-tools", "old_tool")))
	done := make(chan *toolcache.ToolSet, 1)
	go func() {
		s, _ := b.cache.ToolSet(context.Background())
		done <- s
	}()
	eventually.True(t, "discovery of the slow server to be under way", func() bool { return initializeArrived(wire) })
	b.write(doc(`"slow": ` + stdio(bin, "", "-tools", "new_tool")))
	s := <-done
	if s == nil {
		t.Fatal("no snapshot")
	}
	// Whatever was published, a read now must serve the new config.
	if _, ok := b.snap().Tool("slow_new_tool"); !ok {
		t.Fatalf("tools %v after the edit, want slow_new_tool", toolNames(b.snap()))
	}
}

func TestTimeoutFailsTheCallButKeepsTheSession(t *testing.T) {
	b := newBundle(t, doc(`"a": `+stdio(testmcp.Build(t), `"tool_call_timeout": 0.3`)))
	s := b.snap()
	pid := whoami(t, s, "a_whoami")
	_, err := s.Call(context.Background(), "a_sleep", json.RawMessage(`{"ms": 5000}`))
	var ce *dispatch.CallError
	if !errors.As(err, &ce) || !ce.Timeout {
		t.Fatalf("err = %v, want a timeout CallError", err)
	}
	if !strings.Contains(ce.Message, "timed out") {
		t.Errorf("message %q", ce.Message)
	}
	if got := whoami(t, s, "a_whoami"); got != pid {
		t.Errorf("after a timeout the session changed: pid %d, was %d", got, pid)
	}
}

func TestCrashedChildFailsThatCallAndTheNextGetsANewProcess(t *testing.T) {
	b := newBundle(t, doc(`"a": `+stdio(testmcp.Build(t), "")))
	s := b.snap()
	pid := whoami(t, s, "a_whoami")
	_, err := s.Call(context.Background(), "a_exit", json.RawMessage(`{"code": 3}`))
	var ce *dispatch.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a CallError", err)
	}
	got := whoami(t, s, "a_whoami")
	if got == pid || got == 0 {
		t.Errorf("after the crash pid %d, was %d: want a new process", got, pid)
	}
}

func TestUnknownToolAndExplicitMissingConfig(t *testing.T) {
	b := newBundle(t, doc())
	if _, err := b.snap().Call(context.Background(), "nope", nil); !errors.Is(err, toolcache.ErrUnknownTool) {
		t.Errorf("err = %v, want ErrUnknownTool", err)
	}
	c := toolcache.New(toolcache.Options{ConfigPath: filepath.Join(t.TempDir(), "absent.json")})
	defer c.Close()
	if _, err := c.Load(context.Background()); !errors.Is(err, config.ErrExplicitMissing) {
		t.Errorf("Load with a missing explicit file: %v, want ErrExplicitMissing", err)
	}
}

func TestInvalidToolNamesAreDropped(t *testing.T) {
	bin := testmcp.Build(t)
	b := newBundle(t, doc(`"a": `+stdio(bin, "", "-tools", "ok_name,bad.name")))
	s := b.snap()
	if _, ok := s.Tool("a_ok_name"); !ok {
		t.Error("valid sibling dropped")
	}
	if slices.Contains(toolNames(s), "a_bad.name") {
		t.Error("invalid name served")
	}
	if st := status(t, s, "a"); st.InvalidNames != 1 {
		t.Errorf("invalid_names = %d, want 1", st.InvalidNames)
	}
}

func TestProtocolVersionPinning(t *testing.T) {
	bin := testmcp.Build(t)
	versions := []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}
	var servers []string
	for i, v := range versions {
		servers = append(servers, fmt.Sprintf(`"v%d": {"command": %q, "protocol_version": %q}`, i, bin, v))
	}
	servers = append(servers, fmt.Sprintf(`"unpinned": {"command": %q}`, bin))
	b := newBundle(t, doc(servers...))
	s := b.snap()
	for i, v := range versions {
		st := status(t, s, fmt.Sprintf("v%d", i))
		if st.ProtocolVersion != v {
			t.Errorf("pinned %s, negotiated %q (%+v)", v, st.ProtocolVersion, st)
		}
		raw, err := s.Call(context.Background(), fmt.Sprintf("v%d_add", i), json.RawMessage(`{"a":1,"b":2}`))
		if err != nil || !strings.Contains(string(raw), `"sum":3`) {
			t.Errorf("%s: add = %s, %v", v, raw, err)
		}
	}
	// Unpinned, a stdio server that speaks both eras and declares no tasks
	// extension is spoken to in the cheaper one (upstream's
	// TestDefaultRevision).
	if st := status(t, s, "unpinned"); st.ProtocolVersion != "2025-11-25" {
		t.Errorf("unpinned negotiated %q, want 2025-11-25, the newest handshake revision both speak", st.ProtocolVersion)
	}
}

func TestTaskToolsetsHideStatusAndCancelAndMarkSubmit(t *testing.T) {
	bin := testmcp.Build(t)
	b := newBundle(t, doc(
		`"jobs": `+stdio(bin, `"task_toolsets": [{"name": "job", "submit_tool": "echo", "status_tool": "add", "cancel_tool": "fail"}]`),
		`"broken": `+stdio(bin, `"task_toolsets": [{"name": "x", "submit_tool": "echo", "status_tool": "nope", "cancel_tool": "gone"}]`),
	))
	s := b.snap()
	for _, hidden := range []string{"jobs_add", "jobs_fail"} {
		if _, ok := s.Tool(hidden); ok {
			t.Errorf("%s is listed; status and cancel tools belong to the task runtime", hidden)
		}
	}
	submit, ok := s.Tool("jobs_echo")
	if !ok || submit.TaskToolset == nil || submit.TaskToolset.Name != "job" {
		t.Fatalf("jobs_echo = %+v, want it marked as the job toolset's submit tool", submit)
	}
	if !strings.Contains(submit.Description, "Submitted as durable background task 'job'") {
		t.Errorf("description %q lacks the contract sentence", submit.Description)
	}
	if _, ok := s.Tool("jobs_whoami"); !ok {
		t.Error("an unbound tool of a task server was hidden")
	}
	st := status(t, s, "broken")
	if st.State != toolcache.StateFailed || st.Error != "MCP server 'broken' task_toolsets reference missing raw tool(s): gone, nope" {
		t.Errorf("broken: %+v", st)
	}
	if _, ok := s.Tool("broken_echo"); ok {
		t.Error("a server with a broken task binding still serves tools")
	}
}
