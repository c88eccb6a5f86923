package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/upstream"
)

// testRelay records what it is sent and answers requests with answer.
type testRelay struct {
	answer func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

	mu       sync.Mutex
	notes    []string // method + " " + params
	requests []string // method + " " + params
}

func (r *testRelay) Notify(method string, params json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, method+" "+string(params))
}

func (r *testRelay) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	r.mu.Lock()
	r.requests = append(r.requests, method+" "+string(params))
	r.mu.Unlock()
	if r.answer == nil {
		return nil, errors.New("no answer")
	}
	return r.answer(ctx, method, params)
}

func (r *testRelay) seen() (notes, requests []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.notes...), append([]string(nil), r.requests...)
}

// everythingServers are server-everything over stdio and streamable HTTP.
func everythingServers(t *testing.T) map[string]func(t *testing.T) *config.Server {
	index := testnpm.Everything(t)
	return map[string]func(t *testing.T) *config.Server{
		"stdio": func(t *testing.T) *config.Server {
			return &config.Server{Name: "everything", Type: config.TransportStdio, Command: "node", Args: []string{index}}
		},
		"http": func(t *testing.T) *config.Server {
			return &config.Server{Name: "everything", Type: config.TransportHTTP, URL: testnpm.StartEverythingHTTP(t)}
		},
	}
}

func rawRequest(t *testing.T, c *upstream.Conn, method, params string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Request(ctx, method, json.RawMessage(params))
	if err != nil {
		t.Fatalf("%s %s: %v", method, params, err)
	}
	return res
}

// TestEverythingRawRequests sends resources, prompts, completion and
// logging requests to server-everything and reads the raw results.
func TestEverythingRawRequests(t *testing.T) {
	for name, srv := range everythingServers(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := dial(t, srv(t), upstream.Options{})
			if caps := string(c.Capabilities()); !strings.Contains(caps, `"resources"`) || !strings.Contains(caps, `"prompts"`) {
				t.Errorf("capabilities %s: no resources or prompts", caps)
			}

			var resources struct {
				Resources []struct {
					URI string `json:"uri"`
				} `json:"resources"`
			}
			if err := json.Unmarshal(rawRequest(t, c, "resources/list", `{}`), &resources); err != nil || len(resources.Resources) == 0 {
				t.Fatalf("resources/list: %v, %d resources", err, len(resources.Resources))
			}
			uri := resources.Resources[0].URI
			params, _ := json.Marshal(map[string]string{"uri": uri})
			if read := string(rawRequest(t, c, "resources/read", string(params))); !strings.Contains(read, `"contents"`) || !strings.Contains(read, uri) {
				t.Errorf("resources/read %s: %s", uri, read)
			}
			if tpl := string(rawRequest(t, c, "resources/templates/list", `{}`)); !strings.Contains(tpl, `"resourceTemplates"`) {
				t.Errorf("resources/templates/list: %s", tpl)
			}

			if list := string(rawRequest(t, c, "prompts/list", `{}`)); !strings.Contains(list, `"simple-prompt"`) {
				t.Errorf("prompts/list: %s", list)
			}
			if got := string(rawRequest(t, c, "prompts/get", `{"name":"simple-prompt"}`)); !strings.Contains(got, `"messages"`) {
				t.Errorf("prompts/get: %s", got)
			}
			complete := rawRequest(t, c, "completion/complete",
				`{"ref":{"type":"ref/prompt","name":"completable-prompt"},"argument":{"name":"department","value":"Eng"}}`)
			if !strings.Contains(string(complete), `"Engineering"`) || strings.Contains(string(complete), `"Sales"`) {
				t.Errorf("completion/complete: %s", complete)
			}
			if got := string(rawRequest(t, c, "logging/setLevel", `{"level":"error"}`)); got != "{}" {
				t.Errorf("logging/setLevel: %s", got)
			}

			_, err := c.Request(context.Background(), "prompts/get", json.RawMessage(`{"name":"no-such-prompt"}`))
			var rpcErr *upstream.RPCError
			if !errors.As(err, &rpcErr) {
				t.Errorf("prompts/get of an unknown prompt: %v, want an *RPCError", err)
			}
		})
	}
}

// TestRequestHonoursItsContext cancels a raw tools/call whose tool waits
// for the relay's answer: the call returns ctx's error, the relayed request
// ends with it (not at RelayTimeout), and the connection stays usable.
func TestRequestHonoursItsContext(t *testing.T) {
	for name, srv := range everythingServers(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := dial(t, srv(t), upstream.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			ended := make(chan struct{})
			never := &testRelay{answer: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
				<-ctx.Done()
				close(ended)
				return nil, ctx.Err()
			}}
			_, err := c.Request(upstream.WithRelay(ctx, never), "tools/call", json.RawMessage(`{"name":"trigger-sampling-request","arguments":{"prompt":"x"}}`))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a request past its deadline: %v", err)
			}
			select {
			case <-ended:
			case <-time.After(30 * time.Second):
				t.Fatal("the relay was not asked, or its request outlived the call")
			}
			if list := string(rawRequest(t, c, "prompts/list", `{}`)); !strings.Contains(list, "simple-prompt") {
				t.Errorf("after a cancelled request, prompts/list: %s", list)
			}
		})
	}
}

// callText calls a tool and returns its result's text, or the error.
func callText(ctx context.Context, c *upstream.Conn, tool, args string, meta map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := c.CallTool(ctx, tool, json.RawMessage(args), meta)
	if err != nil {
		return "", err
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range res.Content {
		b.WriteString(p.Text)
	}
	if res.IsError {
		return "", errors.New(b.String())
	}
	return b.String(), nil
}

// TestEverythingRelays relays server-everything's progress, elicitation and
// sampling to a downstream relay, and checks the errors the server gets
// when no relay answers.
func TestEverythingRelays(t *testing.T) {
	for name, srv := range everythingServers(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := dial(t, srv(t), upstream.Options{RelayTimeout: 500 * time.Millisecond})
			tests := []struct {
				name    string
				tool    string
				args    string
				meta    map[string]any
				answer  func(context.Context, string, json.RawMessage) (json.RawMessage, error)
				noRelay bool
				want    string // in the result's text
				wantErr string // in the error
				asked   string // the relay was asked this method
			}{
				{name: "progress", tool: "trigger-long-running-operation", args: `{"duration":0.3,"steps":3}`,
					meta: map[string]any{"progressToken": "down-7"}, want: "Long running operation completed"},
				{name: "elicitation", tool: "trigger-elicitation-request", args: `{}`, asked: "elicitation/create",
					answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
						return json.RawMessage(`{"action":"accept","content":{"name":"Ada Lovelace","check":true}}`), nil
					}, want: "- Name: Ada Lovelace"},
				{name: "sampling", tool: "trigger-sampling-request", args: `{"prompt":"hello"}`, asked: "sampling/createMessage",
					answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
						return json.RawMessage(`{"role":"assistant","model":"test-model","content":{"type":"text","text":"sampled words"}}`), nil
					}, want: "sampled words"},
				{name: "client error", tool: "trigger-sampling-request", args: `{"prompt":"hello"}`, asked: "sampling/createMessage",
					answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
						return nil, &upstream.RPCError{Code: -1, Message: "user rejected sampling"}
					}, wantErr: "user rejected sampling"},
				{name: "relay timeout", tool: "trigger-elicitation-request", args: `{}`, asked: "elicitation/create",
					answer: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
						<-ctx.Done()
						return nil, ctx.Err()
					}, wantErr: "the client did not answer within 500ms"},
				{name: "no relay", tool: "trigger-elicitation-request", args: `{}`, noRelay: true,
					wantErr: "the client cannot answer elicitation/create"},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					r := &testRelay{answer: tc.answer}
					ctx := context.Background()
					if !tc.noRelay {
						ctx = upstream.WithRelay(ctx, r)
					}
					text, err := callText(ctx, c, tc.tool, tc.args, tc.meta)
					switch {
					case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
						t.Fatalf("result %q, error %v; want an error with %q", text, err, tc.wantErr)
					case tc.wantErr == "" && err != nil:
						t.Fatalf("error %v", err)
					case tc.want != "" && !strings.Contains(text, tc.want):
						t.Errorf("result %q, want %q in it", text, tc.want)
					}
					notes, requests := r.seen()
					if tc.asked != "" && (len(requests) != 1 || !strings.HasPrefix(requests[0], tc.asked+" ")) {
						t.Errorf("the relay was asked %q, want one %s", requests, tc.asked)
					}
					if tc.meta != nil {
						progress := 0
						for _, n := range notes {
							if strings.HasPrefix(n, "notifications/progress ") {
								progress++
								if !strings.Contains(n, `"progressToken":"down-7"`) {
									t.Errorf("progress with another token than the caller's: %s", n)
								}
							}
						}
						if progress != 3 {
							t.Errorf("%d progress notifications, want 3: %q", progress, notes)
						}
					}
				})
			}
		})
	}
}

// TestSharedConnectionNeverCrossRoutes: on a connection shared by users,
// what the upstream sends reaches only the call it is tied to. Three calls
// at once on one streamable HTTP connection whose tool asks its caller a
// question: each relay gets only its own call's question, and the question
// of the call made without a relay gets an error, never another call's
// client. Over legacy SSE, a log message the upstream sends about bob's
// call after it ended reaches nobody, not alice's call then the only one
// in flight.
func TestSharedConnectionNeverCrossRoutes(t *testing.T) {
	t.Run("concurrent questions over streamable HTTP", testConcurrentQuestions)
	t.Run("a late log message over SSE", testLateLogOverSSE)
}

func testConcurrentQuestions(t *testing.T) {
	s := server.NewMCPServer("ask", "1.0.0", server.WithElicitation())
	release := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(3)
	s.AddTool(mcp.NewTool("ask", mcp.WithString("who", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		who := req.GetString("who", "")
		// Both calls are in flight before either asks.
		arrived.Done()
		<-release
		res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message:         "question for " + who,
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}},
		}})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		b, _ := json.Marshal(res.Content)
		return mcp.NewToolResultText(who + " got " + string(b)), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	// 2025-11-25: server requests (2026-07-28 asks within results instead).
	c := dial(t, &config.Server{Name: "ask", Type: config.TransportHTTP, URL: ts.URL + "/mcp", ProtocolVersion: "2025-11-25"}, upstream.Options{})
	go func() {
		arrived.Wait()
		close(release)
	}()

	relays := map[string]*testRelay{}
	for _, who := range []string{"alice", "bob"} {
		relays[who] = &testRelay{answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(fmt.Sprintf(`{"action":"accept","content":{"answer":"%s's answer"}}`, who)), nil
		}}
	}
	var wg sync.WaitGroup
	results := map[string]string{}
	var mu sync.Mutex
	for _, who := range []string{"alice", "bob", "carol"} {
		ctx := context.Background()
		if r := relays[who]; r != nil {
			ctx = upstream.WithRelay(ctx, r)
		}
		wg.Go(func() {
			text, err := callText(ctx, c, "ask", fmt.Sprintf(`{"who":%q}`, who), nil)
			if err != nil {
				text = "error: " + err.Error()
			}
			mu.Lock()
			results[who] = text
			mu.Unlock()
		})
	}
	wg.Wait()
	for who, r := range relays {
		if want := fmt.Sprintf(`%s got {"answer":"%s's answer"}`, who, who); results[who] != want {
			t.Errorf("%s's call: %q, want %q", who, results[who], want)
		}
		_, requests := r.seen()
		if len(requests) != 1 || !strings.Contains(requests[0], "question for "+who) {
			t.Errorf("%s's relay was asked %q, want only %s's question", who, requests, who)
		}
	}
	if !strings.Contains(results["carol"], "the client cannot answer elicitation/create") {
		t.Errorf("carol's call, made without a relay: %q", results["carol"])
	}
}

func testLateLogOverSSE(t *testing.T) {
	s := server.NewMCPServer("late", "1.0.0", server.WithLogging(), server.WithResourceCapabilities(true, false))
	slowArrived, slowRelease := make(chan struct{}), make(chan struct{})
	s.AddTool(mcp.NewTool("slow"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(slowArrived)
		<-slowRelease
		return mcp.NewToolResultText("slow done"), nil
	})
	session := make(chan string, 1)
	s.AddTool(mcp.NewTool("fire"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		session <- server.ClientSessionFromContext(ctx).SessionID()
		return mcp.NewToolResultText("fired"), nil
	})
	ts := httptest.NewServer(server.NewSSEServer(s))
	t.Cleanup(ts.Close)
	updated := make(chan string, 4)
	logs := &syncBuf{}
	c := dial(t, &config.Server{Name: "late", Type: config.TransportSSE, URL: ts.URL + "/sse", ProtocolVersion: "2025-11-25"}, upstream.Options{
		Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnNotification: func(_ string, params json.RawMessage) { updated <- string(params) },
	})
	rawRequest(t, c, "logging/setLevel", `{"level":"debug"}`)

	alice, bob := &testRelay{}, &testRelay{}
	aliceDone := make(chan error, 1)
	go func() {
		_, err := callText(upstream.WithRelay(context.Background(), alice), c, "slow", `{}`, nil)
		aliceDone <- err
	}()
	<-slowArrived
	if _, err := callText(upstream.WithRelay(context.Background(), bob), c, "fire", `{}`, nil); err != nil {
		t.Fatal(err)
	}
	// Bob's call ended; the upstream logs about it, then sends an update
	// the host hands to OnNotification: the stream is read in order, so
	// once the update arrived the log message was dealt with.
	sid := <-session
	if err := s.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationMessage), map[string]any{"level": "error", "logger": "late", "data": "BOB-PRIVATE-LOG"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": "test://after-the-log"}); err != nil {
		t.Fatal(err)
	}
	if got := <-updated; !strings.Contains(got, "test://after-the-log") {
		t.Fatalf("OnNotification got %s", got)
	}
	close(slowRelease)
	if err := <-aliceDone; err != nil {
		t.Fatal(err)
	}
	for who, r := range map[string]*testRelay{"alice": alice, "bob": bob} {
		if notes, requests := r.seen(); len(notes)+len(requests) != 0 {
			t.Errorf("%s's relay got %q %q, want nothing", who, notes, requests)
		}
	}
	if l := logs.String(); !strings.Contains(l, "names no call") || strings.Contains(l, "BOB-PRIVATE-LOG") {
		t.Errorf("host log %q, want the drop noted at debug without the message's data", l)
	}
}

// TestEverythingServerNotifications: over stdio, a resource update goes to
// Options.OnNotification, and a log message the server sends while a call
// is in flight goes to that call's relay.
func TestEverythingServerNotifications(t *testing.T) {
	updated := make(chan string, 16)
	c := dial(t, everythingServers(t)["stdio"](t), upstream.Options{OnNotification: func(method string, params json.RawMessage) {
		updated <- method + " " + string(params)
	}})
	var resources struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(rawRequest(t, c, "resources/list", `{}`), &resources); err != nil || len(resources.Resources) == 0 {
		t.Fatalf("resources/list: %v", err)
	}
	uri, _ := json.Marshal(resources.Resources[0].URI)
	rawRequest(t, c, "resources/subscribe", `{"uri":`+string(uri)+`}`)
	if _, err := callText(context.Background(), c, "toggle-subscriber-updates", `{}`, nil); err != nil {
		t.Fatal(err)
	}
	// (tools/list_changed comes too: the server adds tools once it knows
	// the client's capabilities.)
	for found := false; !found; {
		select {
		case n := <-updated:
			found = strings.HasPrefix(n, "notifications/resources/updated ") && strings.Contains(n, string(uri))
		case <-time.After(30 * time.Second):
			t.Fatal("no notifications/resources/updated")
		}
	}

	rawRequest(t, c, "logging/setLevel", `{"level":"debug"}`)
	if _, err := callText(context.Background(), c, "toggle-simulated-logging", `{}`, nil); err != nil {
		t.Fatal(err)
	}
	// The next message comes within 5 s, while this call runs.
	r := &testRelay{}
	if _, err := callText(upstream.WithRelay(context.Background(), r), c, "trigger-long-running-operation", `{"duration":6,"steps":2}`, nil); err != nil {
		t.Fatal(err)
	}
	notes, _ := r.seen()
	if len(notes) == 0 || !strings.HasPrefix(notes[0], "notifications/message ") {
		t.Errorf("the relay got %q, want a notifications/message", notes)
	}
}

// askServer serves, over streamable HTTP, a prompt, a resource, and a tool
// "ask" that asks its caller a question in the 2026-07-28 way (an
// input_required result; mcp-go's server turns it into an elicitation
// request for an earlier revision).
func askServer(t *testing.T) string {
	s := server.NewMCPServer("ask", "1.0.0", server.WithElicitation(), server.WithLogging(),
		server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false))
	s.AddPrompt(mcp.NewPrompt("greet"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greeting", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello there"))}), nil
	})
	s.AddResource(mcp.NewResource("test://note", "note"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "the note"}}, nil
	})
	s.AddTool(mcp.NewTool("ask", mcp.WithString("who", mcp.Required())), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		who := req.GetString("who", "")
		if res := server.ElicitationResponse(req.Params.InputResponses, "q"); res != nil {
			b, _ := json.Marshal(res.Content)
			return mcp.NewToolResultText(who + " got " + string(b)), nil
		}
		return server.NewInputRequestBuilder("").Elicit("q", mcp.ElicitationParams{
			Message:         "question for " + who,
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}},
		}).ToolResult(), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestModernConnection: on a 2026-07-28 connection raw requests carry the
// protocol _meta (the server refuses them without), logging/setLevel is
// kept for later requests, and a question asked within a result reaches the
// relay of the call that got it, each call its own.
func TestModernConnection(t *testing.T) {
	c := dial(t, &config.Server{Name: "ask", Type: config.TransportHTTP, URL: askServer(t)}, upstream.Options{})
	if !mcp.IsModernProtocol(c.ProtocolVersion()) {
		t.Fatalf("negotiated %s, want 2026-07-28 or later", c.ProtocolVersion())
	}
	if got := string(rawRequest(t, c, "prompts/get", `{"name":"greet"}`)); !strings.Contains(got, "hello there") {
		t.Errorf("prompts/get: %s", got)
	}
	if got := string(rawRequest(t, c, "resources/read", `{"uri":"test://note","_meta":{"x":1}}`)); !strings.Contains(got, "the note") {
		t.Errorf("resources/read: %s", got)
	}
	if got := string(rawRequest(t, c, "logging/setLevel", `{"level":"warning"}`)); got != "{}" {
		t.Errorf("logging/setLevel: %s", got)
	}
	if got := string(rawRequest(t, c, "resources/list", `{}`)); !strings.Contains(got, "test://note") {
		t.Errorf("resources/list after setLevel: %s", got)
	}
	if caps := string(c.Capabilities()); !strings.Contains(caps, `"prompts"`) {
		t.Errorf("capabilities %s", caps)
	}
	var wg sync.WaitGroup
	for _, who := range []string{"alice", "bob"} {
		wg.Go(func() {
			r := &testRelay{answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(fmt.Sprintf(`{"action":"accept","content":{"answer":"%s's answer"}}`, who)), nil
			}}
			text, err := callText(upstream.WithRelay(context.Background(), r), c, "ask", fmt.Sprintf(`{"who":%q}`, who), nil)
			if want := fmt.Sprintf(`%s got {"answer":"%s's answer"}`, who, who); err != nil || text != want {
				t.Errorf("%s's call: %q, %v; want %q", who, text, err, want)
			}
			if _, requests := r.seen(); len(requests) != 1 || !strings.Contains(requests[0], "question for "+who) {
				t.Errorf("%s's relay was asked %q", who, requests)
			}
		})
	}
	wg.Wait()
	if _, err := callText(context.Background(), c, "ask", `{"who":"nobody"}`, nil); err == nil || !strings.Contains(err.Error(), "the client cannot answer") {
		t.Errorf("a call without a relay: %v, want the client cannot answer", err)
	}
}

// TestCancelledRequestIsCancelledUpstream: a raw request whose ctx ends
// returns ctx's error and the stdio server gets notifications/cancelled
// for its id.
func TestCancelledRequestIsCancelledUpstream(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{})
	var once sync.Once
	log := slog.New(&stderrWatch{line: `cancelled "antler-1"`, seen: func() { once.Do(func() { close(seen) }) }})
	c := dial(t, &config.Server{Name: "broken", Type: config.TransportStdio, Command: exe,
		Env: config.Pairs{{Key: brokenServerEnv, Value: "1"}}}, upstream.Options{Logger: log})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Request(ctx, "hang", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request past its deadline: %v", err)
	}
	select {
	case <-seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the server got no notifications/cancelled for the request")
	}
}

// TestRequestResultIsCapped: a raw request's result above max_result_bytes
// fails that request with the cap error and the connection lives on.
func TestRequestResultIsCapped(t *testing.T) {
	c := dialBroken(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var tooLarge *upstream.ResultTooLargeError
	if _, err := c.Request(ctx, "big", json.RawMessage(`{}`)); !errors.As(err, &tooLarge) || tooLarge.Ended {
		t.Fatalf("a 4 MiB result with a 1 MiB cap: %v", err)
	}
	if _, err := c.Request(ctx, "unknown", nil); err == nil {
		t.Error("an unknown method succeeded")
	} else if _, ok := errors.AsType[*upstream.RPCError](err); !ok {
		t.Errorf("after the capped request, an unknown method: %v, want an *RPCError", err)
	}
}

// TestRequestOverSSE sends a raw request over legacy HTTP+SSE.
func TestRequestOverSSE(t *testing.T) {
	c := dial(t, &config.Server{Name: "demo", Type: config.TransportSSE, URL: testmcp.StartHTTP(t, "sse") + "/sse"}, upstream.Options{})
	if got := string(rawRequest(t, c, "tools/list", `{}`)); !strings.Contains(got, `"tools"`) {
		t.Errorf("tools/list: %s", got)
	}
	if caps := string(c.Capabilities()); !strings.Contains(caps, `"tools"`) {
		t.Errorf("capabilities %s", caps)
	}
}
