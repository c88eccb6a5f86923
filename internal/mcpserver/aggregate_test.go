package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/conformance"
	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// aggHost is a real gateway (or, for a page size of its own, the bare door
// behind a fixed principal) over a tool cache whose config names the
// conformance fixture as a stdio server ("conf") and, optionally, over
// streamable HTTP ("confhttp"): the same resources and prompts twice.
// Callers are "default" (an admin), "alice" and "bob", by their keys.
type aggHost struct {
	t       *testing.T
	url     string
	cache   *toolcache.Cache
	cfgPath string
	servers string
	direct  bool // the bare door: every caller is "default"
}

// aggKeys are the gateway's keys, by user.
var aggKeys = map[string]string{"default": "kd", "alice": "ka", "bob": "kb"}

func newAggHost(t *testing.T, withHTTP, prefix bool, pageSize int) *aggHost {
	t.Helper()
	bin := conformance.BuildFixture(t)
	h := &aggHost{t: t, cfgPath: filepath.Join(t.TempDir(), "extensions_config.json")}
	h.servers = fmt.Sprintf(`"conf": {"command": %q, "tool_name_prefix": %t}`, bin, prefix)
	if withHTTP {
		u := testmcp.StartBinaryHTTP(t, bin, "conformance fixture", "http") + "/mcp"
		h.servers += fmt.Sprintf(`, "confhttp": {"type": "http", "url": %q, "tool_name_prefix": %t}`, u, prefix)
	}
	h.writeConfig("")
	h.cache = toolcache.New(toolcache.Options{ConfigPath: h.cfgPath, DataDir: t.TempDir()})
	t.Cleanup(h.cache.Close)
	var handler http.Handler
	if pageSize == 0 {
		gw := testgateway.New(t, gateway.Options{Cache: h.cache, Auth: principal.New([]settings.Key{
			{Key: "kd", User: "default", Role: settings.RoleAdmin},
			{Key: "ka", User: "alice", Role: settings.RoleAgent},
			{Key: "kb", User: "bob", Role: settings.RoleAgent},
		})})
		t.Cleanup(gw.Close)
		handler = gw.Handler()
	} else {
		h.direct = true
		door := mcpserver.New(mcpserver.Options{Cache: h.cache, ListPageSize: pageSize, WatchInterval: -1})
		t.Cleanup(door.Close)
		streamable := door.Streamable()
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			streamable.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), principal.Default)))
		})
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// writeConfig writes the config with extra servers appended.
func (h *aggHost) writeConfig(extra string) {
	h.t.Helper()
	if err := os.WriteFile(h.cfgPath, []byte(`{"mcpServers": {`+h.servers+extra+`}}`), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// auth is the header that makes a request user's.
func (h *aggHost) auth(user string) map[string]string {
	if key := h.key(user); key != "" {
		return map[string]string{"Authorization": "Bearer " + key}
	}
	return nil
}

// key is user's API key ("" for the bare door).
func (h *aggHost) key(user string) string {
	if h.direct {
		return ""
	}
	if user == "" {
		user = "default"
	}
	return aggKeys[user]
}

// client starts an mcp-go client on version ("" is 2026-07-28) as user.
func (h *aggHost) client(version, user string) *client.Client {
	h.t.Helper()
	return (&host{t: h.t, url: h.url}).client(version, h.key(user))
}

// sessions is the pooled stdio session count of "conf".
func (h *aggHost) sessions() int {
	h.t.Helper()
	snap, err := h.cache.ToolSet(testCtx(h.t))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, st := range snap.ServerStatuses() {
		if st.Name == "conf" {
			return st.Sessions
		}
	}
	return -1
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func resourceURIs(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListResources(testCtx(t), mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	var out []string
	for _, r := range res.Resources {
		out = append(out, r.URI)
	}
	return out
}

func templateURIs(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListResourceTemplates(testCtx(t), mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	var out []string
	for _, r := range res.ResourceTemplates {
		out = append(out, r.URITemplate.Raw())
	}
	return out
}

func promptNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListPrompts(testCtx(t), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var out []string
	for _, p := range res.Prompts {
		out = append(out, p.Name)
	}
	return out
}

func read(t *testing.T, c *client.Client, uri string) mcp.ResourceContents {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(testCtx(t), req)
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %d contents", uri, len(res.Contents))
	}
	return res.Contents[0]
}

func getPrompt(t *testing.T, c *client.Client, name string, args map[string]string) string {
	t.Helper()
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.GetPrompt(testCtx(t), req)
	if err != nil {
		t.Fatalf("prompts/get %s: %v", name, err)
	}
	var b strings.Builder
	for _, m := range res.Messages {
		if tc, ok := m.Content.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestAggregatesTwoUpstreamsOnEachRevision(t *testing.T) {
	h := newAggHost(t, true, true, 0)
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("version "+version, func(t *testing.T) {
			c := h.client(version, "")
			caps := c.GetServerCapabilities()
			if caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged || caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Completions == nil {
				t.Errorf("capabilities: %+v", caps)
			}
			uris := resourceURIs(t, c)
			for _, want := range []string{"test://static-text", "test://static-binary", "antler://confhttp/test://static-text", "antler://confhttp/test://static-binary"} {
				if !slices.Contains(uris, want) {
					t.Errorf("resources %v: no %s", uris, want)
				}
			}
			if idx := slices.Index(uris, "test://static-text"); idx > slices.Index(uris, "antler://confhttp/test://static-text") {
				t.Errorf("config order lost: %v", uris)
			}
			tmpls := templateURIs(t, c)
			if !slices.Equal(tmpls, []string{"test://template/{id}/data", "antler://confhttp/test://template/{id}/data"}) {
				t.Errorf("templates: %v", tmpls)
			}
			names := promptNames(t, c)
			for _, want := range []string{"conf_test_simple_prompt", "confhttp_test_prompt_with_arguments"} {
				if !slices.Contains(names, want) {
					t.Errorf("prompts %v: no %s", names, want)
				}
			}
			if slices.Contains(names, "antler/routed-prompt") {
				t.Errorf("the catch-all prompt is listed: %v", names)
			}

			for _, uri := range []string{"test://static-text", "antler://confhttp/test://static-text"} {
				tc, ok := read(t, c, uri).(mcp.TextResourceContents)
				if !ok || tc.Text == "" || tc.URI != uri {
					t.Errorf("read %s: %+v", uri, tc)
				}
			}
			if bc, ok := read(t, c, "antler://confhttp/test://static-binary").(mcp.BlobResourceContents); !ok || bc.Blob == "" || bc.MIMEType != "image/png" {
				t.Errorf("binary read: %+v", bc)
			}
			for _, uri := range []string{"test://template/123/data", "antler://confhttp/test://template/123/data"} {
				tc, _ := read(t, c, uri).(mcp.TextResourceContents)
				if !strings.Contains(tc.Text, `"Data for ID: 123"`) {
					t.Errorf("template read %s: %+v", uri, tc)
				}
			}
			if got := getPrompt(t, c, "confhttp_test_prompt_with_arguments", map[string]string{"arg1": "a", "arg2": "b"}); got != "Prompt with arguments: arg1='a', arg2='b'" {
				t.Errorf("prompt: %q", got)
			}
			if got := getPrompt(t, c, "conf_test_simple_prompt", nil); got != "This is a simple prompt for testing." {
				t.Errorf("prompt: %q", got)
			}
			req := mcp.GetPromptRequest{}
			req.Params.Name = "test_simple_prompt" // the unprefixed name is no prompt here
			if _, err := c.GetPrompt(testCtx(t), req); err == nil {
				t.Error("unprefixed prompt name got an answer")
			}

			creq := mcp.CompleteRequest{}
			creq.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: "conf_test_prompt_with_arguments"}
			creq.Params.Argument = mcp.CompleteArgument{Name: "arg1", Value: "pa"}
			cres, err := c.Complete(testCtx(t), creq)
			if err != nil {
				t.Fatalf("complete: %v", err)
			}
			if !slices.Equal(cres.Completion.Values, []string{"paris", "park", "party"}) {
				t.Errorf("completion: %v", cres.Completion.Values)
			}

			if version == "" {
				return // logging/setLevel and resources/subscribe are not 2026-07-28 methods
			}
			if err := c.SetLevel(testCtx(t), mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelWarning}}); err != nil {
				t.Errorf("setLevel: %v", err)
			}
			for _, uri := range []string{"test://watched-resource", "antler://confhttp/test://watched-resource"} {
				if err := c.Subscribe(testCtx(t), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
					t.Errorf("subscribe %s: %v", uri, err)
				}
				if err := c.Unsubscribe(testCtx(t), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
					t.Errorf("unsubscribe %s: %v", uri, err)
				}
			}
			// confhttp speaks 2026-07-28, which has no resources/subscribe:
			// it was not sent one (it would answer as a dead session).
			if tc, _ := read(t, c, "antler://confhttp/test://watched-resource").(mcp.TextResourceContents); tc.Text == "" {
				t.Errorf("confhttp after a subscribe: %+v", tc)
			}
		})
	}
}

func TestPassThroughNamesWithoutPrefix(t *testing.T) {
	h := newAggHost(t, true, false, 0)
	c := h.client("2025-11-25", "")
	names := promptNames(t, c)
	// Both servers offer test_simple_prompt: the first in config order keeps it.
	if n := strings.Count(strings.Join(names, " "), "test_simple_prompt"); n != 1 || !slices.Contains(names, "test_prompt_with_arguments") {
		t.Errorf("prompts: %v", names)
	}
	if got := getPrompt(t, c, "test_simple_prompt", nil); got != "This is a simple prompt for testing." {
		t.Errorf("prompt: %q", got)
	}
	if tc, _ := read(t, c, "test://static-text").(mcp.TextResourceContents); tc.URI != "test://static-text" {
		t.Errorf("read: %+v", tc)
	}
}

func TestStdioResourcesComeFromTheCallersSession(t *testing.T) {
	h := newAggHost(t, false, false, 0)
	alice := h.client("2025-11-25", "alice")
	if uris := resourceURIs(t, alice); !slices.Contains(uris, "test://static-text") || slices.ContainsFunc(uris, func(u string) bool { return strings.HasPrefix(u, mcpserver.RewrittenScheme) }) {
		t.Errorf("single upstream URIs: %v", uris)
	}
	n := h.sessions()
	read(t, alice, "test://static-text")
	if got := h.sessions(); got != n {
		t.Errorf("alice's read opened a session: %d → %d", n, got)
	}
	bob := h.client("2025-11-25", "bob")
	promptNames(t, bob)
	if got := h.sessions(); got != n+1 {
		t.Errorf("bob's list: %d sessions, want %d", got, n+1)
	}
}

func TestPaginationAndForgedCursor(t *testing.T) {
	h := newAggHost(t, true, true, 2)
	c := h.client("2025-11-25", "")
	var all []string
	var cursor mcp.Cursor
	pages := 0
	for {
		req := mcp.ListPromptsRequest{}
		req.Params.Cursor = cursor
		res, err := c.ListPromptsByPage(testCtx(t), req)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		if len(res.Prompts) > 2 {
			t.Fatalf("page of %d", len(res.Prompts))
		}
		for _, p := range res.Prompts {
			all = append(all, p.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if len(all) != 8 || pages != 4 || !strings.HasPrefix(all[0], "conf_") || !strings.HasPrefix(all[7], "confhttp_") {
		t.Errorf("%d pages: %v", pages, all)
	}
	// A valid cursor of one list is no cursor of another.
	req := mcp.ListPromptsRequest{}
	first, err := c.ListPromptsByPage(testCtx(t), req)
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %v", err)
	}
	treq := mcp.ListResourcesRequest{}
	treq.Params.Cursor = first.NextCursor
	if _, err := c.ListResourcesByPage(testCtx(t), treq); !errors.Is(err, mcp.ErrInvalidParams) {
		t.Errorf("a prompts cursor on resources/list: %v", err)
	}
	for _, forged := range []string{"bm90IGEgY3Vyc29y", "not base64!", "eyJvIjoxLCJmIjoiMDAwMCJ9"} {
		req := mcp.ListResourcesRequest{}
		req.Params.Cursor = mcp.Cursor(forged)
		_, err := c.ListResourcesByPage(testCtx(t), req)
		if !errors.Is(err, mcp.ErrInvalidParams) {
			t.Errorf("forged cursor %q: %v", forged, err)
		}
	}
	raw, _ := json.Marshal(all)
	t.Logf("prompts: %s", raw)
}

func TestLegacySSEReadsAndGets(t *testing.T) {
	h := newAggHost(t, true, true, 0)
	c, err := client.NewSSEMCPClient(h.url+"/sse", client.WithHeaders(h.auth("alice")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := testCtx(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2024-11-05"
	init.Params.ClientInfo = mcp.Implementation{Name: "sse", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	if tc, _ := read(t, c, "antler://confhttp/test://static-text").(mcp.TextResourceContents); tc.Text == "" {
		t.Errorf("read over SSE: %+v", tc)
	}
	if got := getPrompt(t, c, "conf_test_simple_prompt", nil); got != "This is a simple prompt for testing." {
		t.Errorf("prompt over SSE: %q", got)
	}
}

func TestListChangedWhenTheToolSetRebuilds(t *testing.T) {
	h := newAggHost(t, false, true, 0)
	c := h.client("2025-11-25", "")
	got := make(chan string, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) { got <- n.Method })
	before := promptNames(t, c)
	h.writeConfig(fmt.Sprintf(`, "second": {"command": %q}`, conformance.BuildFixture(t)))
	h.cache.Rebuild()
	mcpNames(t, c) // the door syncs on a tools/list
	want := map[string]bool{mcp.MethodNotificationResourcesListChanged: true, mcp.MethodNotificationPromptsListChanged: true}
	timeout := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case m := <-got:
			delete(want, m)
		case <-timeout:
			t.Fatalf("no %v", want)
		}
	}
	if after := promptNames(t, c); len(after) != 2*len(before) {
		t.Errorf("prompts after the change: %v (before %v)", after, before)
	}
}

// watchServer is a streamable-HTTP MCP server with one subscribable
// resource, watch://a, and a tool "touch" that announces an update of it
// while its client is subscribed to it.
func watchServer(t *testing.T) string {
	u, _ := watchServerSubscribed(t)
	return u
}

// watchServerSubscribed is watchServer and whether its client (Antler's
// one connection to it) is subscribed to watch://a.
func watchServerSubscribed(t *testing.T) (string, *atomic.Bool) {
	return watchServerGated(t, nil, nil)
}

// watchServerGated is watchServerSubscribed whose subscribes, when gate is
// not nil, each signal arrived, wait for gate to close, and signal arrived
// again once the server has taken them.
func watchServerGated(t *testing.T, arrived chan<- struct{}, gate <-chan struct{}) (string, *atomic.Bool) {
	t.Helper()
	subscribed := new(atomic.Bool)
	hooks := &server.Hooks{}
	if gate != nil {
		hooks.AddBeforeSubscribe(func(context.Context, any, *mcp.SubscribeRequest) {
			arrived <- struct{}{}
			<-gate
		})
	}
	hooks.AddAfterSubscribe(func(_ context.Context, _ any, m *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if m.Params.URI == "watch://a" {
			subscribed.Store(true)
			if gate != nil {
				arrived <- struct{}{} // done
			}
		}
	})
	hooks.AddAfterUnsubscribe(func(_ context.Context, _ any, m *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if m.Params.URI == "watch://a" {
			subscribed.Store(false)
		}
	})
	srv := server.NewMCPServer("watch", "1", server.WithResourceCapabilities(true, false), server.WithToolCapabilities(false),
		server.WithCompletions(), server.WithResourceCompletionProvider(itemCompletions{}), server.WithHooks(hooks))
	srv.AddResourceTemplate(mcp.NewResourceTemplate("watch://item/{id}", "item"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "item"}}, nil
	})
	srv.AddResource(mcp.NewResource("watch://a", "a"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "watch://a", Text: "a"}}, nil
	})
	srv.AddTool(mcp.NewTool("touch"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !subscribed.Load() {
			return mcp.NewToolResultText("touched"), nil
		}
		err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": "watch://a"})
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText("touched"), nil
	})
	// mcp-go's streamable server can drop a notification sent just before
	// the result unless an event store keeps it.
	hs := httptest.NewServer(server.NewStreamableHTTPServer(srv, server.WithEventStore(server.NewInMemoryEventStore())))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", subscribed
}

// itemCompletions completes watch://item/{id}'s id; anything else has none.
type itemCompletions struct{}

func (itemCompletions) CompleteResourceArgument(_ context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if uri != "watch://item/{id}" || arg.Name != "id" {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return &mcp.Completion{Values: []string{arg.Value + "1", arg.Value + "2"}}, nil
}

func TestSubscriptionUpdatesAndResourceCompletion(t *testing.T) {
	h := newAggHost(t, false, true, 0)
	// 2026-07-28 replaced resources/subscribe with subscriptions/listen,
	// which the upstream side does not hold open: the server is pinned.
	h.writeConfig(fmt.Sprintf(`, "watch": {"type": "http", "url": %q, "protocol_version": "2025-11-25"}`, watchServer(t)))
	h.cache.Rebuild()
	updates := make(chan string, 4)
	// The update is a notification outside any request of the subscriber's
	// (the upstream sends it during the touch call, but it reaches the door
	// on its own): it is delivered on the session's GET stream, which the
	// subscriber keeps open, whenever it is sent.
	subscriber := (&host{t: t, url: h.url}).client("2025-11-25", h.key("alice"), transport.WithContinuousListening())
	subscriber.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourceUpdated {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			select { // late duplicates of a retried touch are not waited for
			case updates <- uri:
			default:
			}
		}
	})
	bystander := h.client("2025-11-25", "bob")
	stray := make(chan string, 4)
	bystander.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourceUpdated {
			stray <- n.Method
		}
	})
	if err := subscriber.Subscribe(testCtx(t), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "watch://a"}}); err != nil {
		t.Fatal(err)
	}
	// Each touch sends one update. mcp-go may still lose one between the
	// upstream and the door (a notification racing its call's result), so
	// touch again until one arrives: what is asserted is that the
	// subscriber gets an update at all, and the bystander never does.
	got := ""
	for i := 0; i < 10 && got == ""; i++ {
		if res := call(t, subscriber, "watch_touch", map[string]any{}, nil); textOf(res) != "touched" {
			t.Fatalf("touch: %+v", res)
		}
		select {
		case got = <-updates:
		case <-time.After(3 * time.Second):
		}
	}
	if got != "watch://a" {
		t.Fatalf("notifications/resources/updated after 10 touches: %q", got)
	}
	if res := call(t, bystander, "watch_touch", map[string]any{}, nil); textOf(res) != "touched" {
		t.Fatalf("touch: %+v", res)
	}
	select {
	case m := <-stray:
		t.Errorf("a session that did not subscribe got %s", m)
	default:
	}
	if err := subscriber.Unsubscribe(testCtx(t), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: "watch://a"}}); err != nil {
		t.Fatal(err)
	}

	// ref/resource completes at the server that lists the template.
	creq := mcp.CompleteRequest{}
	creq.Params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: "watch://item/{id}"}
	creq.Params.Argument = mcp.CompleteArgument{Name: "id", Value: "x"}
	cres, err := subscriber.Complete(testCtx(t), creq)
	if err != nil {
		t.Fatalf("complete: %v", err)
	}
	if !slices.Equal(cres.Completion.Values, []string{"x1", "x2"}) {
		t.Errorf("resource completion: %v", cres.Completion.Values)
	}
	if tc, _ := read(t, subscriber, "watch://item/7").(mcp.TextResourceContents); tc.Text != "item" {
		t.Errorf("template read: %+v", tc)
	}
}

// TestConformanceResourcesAndPromptsThroughTheDoor runs the suite's
// resource, prompt, completion and logging scenarios against /mcp fronting
// the fixture with names passed through.
func TestConformanceResourcesAndPromptsThroughTheDoor(t *testing.T) {
	conformance.Node22(t)
	h := newAggHost(t, false, false, 1000)
	scenarios := []string{"resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
		"resources-subscribe", "resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
		"prompts-get-embedded-resource", "prompts-get-with-image", "completion-complete", "logging-set-level"}
	res := conformance.RunServerSuite(t, strings.Replace(h.url, "127.0.0.1", "localhost", 1)+"/mcp", conformance.Options{Scenarios: scenarios})
	for _, name := range scenarios {
		sc, ok := res.Scenarios[name]
		if !ok || sc.Failed > 0 || sc.Passed == 0 {
			t.Errorf("%s: %+v", name, sc)
		}
	}
	if t.Failed() {
		t.Log(res.Output)
	}
}

// TestUnsubscribeKeepsAnotherUsersSubscription: alice and bob subscribe to
// the same resource of an HTTP server, whose one connection serves both.
// Alice's unsubscribe must not reach the server while bob is subscribed
// (it would end his updates too); his own unsubscribe, the last, does.
func TestUnsubscribeKeepsAnotherUsersSubscription(t *testing.T) {
	h := newAggHost(t, false, true, 0)
	u, upstreamSubscribed := watchServerSubscribed(t)
	h.writeConfig(fmt.Sprintf(`, "watch": {"type": "http", "url": %q, "protocol_version": "2025-11-25"}`, u))
	h.cache.Rebuild()
	alice := h.client("2025-11-25", "alice")
	bob := (&host{t: t, url: h.url}).client("2025-11-25", h.key("bob"), transport.WithContinuousListening())
	updates := make(chan string, 4)
	bob.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourceUpdated {
			select {
			case updates <- n.Method:
			default:
			}
		}
	})
	for _, c := range []*client.Client{alice, bob} {
		if err := c.Subscribe(testCtx(t), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "watch://a"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice.Unsubscribe(testCtx(t), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: "watch://a"}}); err != nil {
		t.Fatal(err)
	}
	if !upstreamSubscribed.Load() {
		t.Fatal("alice's unsubscribe reached the server while bob was subscribed")
	}
	// Bob still hears the resource change (mcp-go may drop a notification
	// racing its call's result: touch until one arrives).
	heard := false
	for i := 0; i < 10 && !heard; i++ {
		if res := call(t, bob, "watch_touch", map[string]any{}, nil); textOf(res) != "touched" {
			t.Fatalf("touch: %+v", res)
		}
		select {
		case <-updates:
			heard = true
		case <-time.After(3 * time.Second):
		}
	}
	if !heard {
		t.Error("bob heard no update after alice unsubscribed")
	}
	if err := bob.Unsubscribe(testCtx(t), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: "watch://a"}}); err != nil {
		t.Fatal(err)
	}
	if upstreamSubscribed.Load() {
		t.Error("the last subscriber's unsubscribe did not reach the server")
	}
}

// TestSubscribeOfAnEndedSessionIsTakenBack: a session that ends while its
// subscribe is on its way upstream leaves no subscription behind. Recorded
// for a session that no longer exists, it would keep every later
// unsubscribe of that resource (any user's, on a shared connection) from
// reaching the server.
func TestSubscribeOfAnEndedSessionIsTakenBack(t *testing.T) {
	h := newAggHost(t, false, true, 0)
	arrived, gate := make(chan struct{}, 4), make(chan struct{})
	u, upstreamSubscribed := watchServerGated(t, arrived, gate)
	h.writeConfig(fmt.Sprintf(`, "watch": {"type": "http", "url": %q, "protocol_version": "2025-11-25"}`, u))
	h.cache.Rebuild()
	alice := h.client("2025-11-25", "alice")
	go func() {
		_ = alice.Subscribe(testCtx(t), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "watch://a"}})
	}()
	<-arrived // the subscribe is at the server
	endSession(t, h.url, h.key("alice"), alice)
	close(gate)
	<-arrived // the server took the subscribe
	eventually.True(t, "the ended session's subscription to be taken back upstream", func() bool {
		return !upstreamSubscribed.Load()
	})

	// Nothing of alice's is left to hold the resource: bob's unsubscribe,
	// the last, reaches the server.
	bob := h.client("2025-11-25", "bob")
	if err := bob.Subscribe(testCtx(t), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "watch://a"}}); err != nil {
		t.Fatal(err)
	}
	<-arrived
	<-arrived
	if !upstreamSubscribed.Load() {
		t.Fatal("bob's subscribe did not reach the server")
	}
	if err := bob.Unsubscribe(testCtx(t), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: "watch://a"}}); err != nil {
		t.Fatal(err)
	}
	if upstreamSubscribed.Load() {
		t.Error("bob's unsubscribe did not reach the server: an ended session still holds the resource")
	}
}
