package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/conformance"
)

// The suite itself runs against this server over streamable HTTP in
// internal/conformance (TestFixturePassesSuite). These tests cover stdio,
// the transport a gateway fronts it with, where no suite can reach it.

// testTimeout bounds every exchange with the server.
const testTimeout = 30 * time.Second

// wantTools are the tool names the suite calls, sorted.
var wantTools = []string{
	"json_schema_2020_12_tool", "test_audio_content", "test_elicitation", "test_elicitation_sep1034_defaults",
	"test_elicitation_sep1330_enums", "test_embedded_resource", "test_error_handling", "test_image_content",
	"test_multiple_content_types", "test_sampling", "test_simple_text", "test_tool_with_logging", "test_tool_with_progress",
}

// fakeLLM answers sampling requests with "sampled: <first message text>".
type fakeLLM struct{}

func (fakeLLM) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	text := ""
	if len(req.Messages) > 0 {
		text = mcp.GetTextFromContent(req.Messages[0].Content)
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled: " + text)},
		Model:           "fake", StopReason: "endTurn",
	}, nil
}

// acceptDefaults accepts every elicitation with the schema's defaults.
type acceptDefaults struct{}

func (acceptDefaults) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	raw, err := json.Marshal(req.Params.RequestedSchema)
	if err != nil {
		return nil, err
	}
	var schema struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	content := map[string]any{}
	for name, p := range schema.Properties {
		if p.Default != nil {
			content[name] = p.Default
		}
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: content}}, nil
}

// TestStdio drives the server over stdio with mcp-go's client, once on the
// initialize handshake (server-initiated sampling and elicitation requests)
// and once on the client's newest protocol (multi round-trip input
// requests): the tool names, the answers that pass through the client, and
// progress must be the same on both.
func TestStdio(t *testing.T) {
	bin := conformance.BuildFixture(t)
	tests := []struct {
		name string
		opts []client.ClientOption
	}{
		{"2025-11-25", []client.ClientOption{client.WithProtocolVersion("2025-11-25")}},
		{"newest", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			var mu sync.Mutex
			var progress []float64
			c := client.NewClient(transport.NewStdio(bin, nil),
				append([]client.ClientOption{client.WithSamplingHandler(fakeLLM{}), client.WithElicitationHandler(acceptDefaults{})}, tt.opts...)...)
			t.Cleanup(func() { _ = c.Close() })
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationProgress) {
					mu.Lock()
					defer mu.Unlock()
					p, _ := n.Params.AdditionalFields["progress"].(float64)
					progress = append(progress, p)
				}
			})
			if err := c.Start(ctx); err != nil {
				t.Fatalf("start: %v", err)
			}
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
				ClientInfo: mcp.Implementation{Name: "fixture-test", Version: "0"},
			}}); err != nil {
				t.Fatalf("initialize: %v", err)
			}

			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, wantTools) {
				t.Errorf("tools = %v, want %v", names, wantTools)
			}

			calls := []struct {
				tool string
				args map[string]any
				want string
			}{
				{toolSimpleText, nil, simpleText},
				{toolSampling, map[string]any{"prompt": "hi"}, "LLM response: sampled: hi"},
				{toolElicitation, map[string]any{"message": "who?"}, `User response: action=accept, content={}`},
				{toolSEP1034Defaults, nil, `Elicitation completed: action=accept, content={"age":30,"name":"John Doe","score":95.5,"status":"active","verified":true}`},
			}
			for _, call := range calls {
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: call.tool, Arguments: call.args}})
				if err != nil {
					t.Errorf("%s: %v", call.tool, err)
					continue
				}
				if got := resultText(res); res.IsError || got != call.want {
					t.Errorf("%s = %q (isError %v), want %q", call.tool, got, res.IsError, call.want)
				}
			}

			req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolProgress, Meta: &mcp.Meta{ProgressToken: "p1"}}}
			if _, err := c.CallTool(ctx, req); err != nil {
				t.Fatalf("%s: %v", toolProgress, err)
			}
			mu.Lock()
			got := slices.Clone(progress)
			mu.Unlock()
			if !slices.Equal(got, progressSteps) {
				t.Errorf("progress before the result of %s = %v, want %v", toolProgress, got, progressSteps)
			}

			read, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "test://template/123/data"}})
			if err != nil {
				t.Fatalf("resources/read: %v", err)
			}
			want := `{"id":"123","templateTest":true,"data":"Data for ID: 123"}`
			if len(read.Contents) != 1 {
				t.Fatalf("resources/read: %d contents, want 1", len(read.Contents))
			}
			if tc, ok := read.Contents[0].(mcp.TextResourceContents); !ok || tc.Text != want || tc.MIMEType != "application/json" {
				t.Errorf("resources/read = %#v, want application/json %s", read.Contents[0], want)
			}
		})
	}
}

// TestStdioKeepsRawSchema reads tools/list straight off the server's stdout:
// the 2020-12 input schema must be on the wire byte for byte. (mcp-go's
// client decodes input schemas into a struct without $schema, so it cannot
// be the witness.)
func TestStdioKeepsRawSchema(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, conformance.BuildFixture(t))
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run the server: %v", err)
	}
	var list struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, `"id":2`) {
			if err := json.Unmarshal([]byte(line), &list); err != nil {
				t.Fatalf("decode tools/list: %v\n%s", err, line)
			}
		}
	}
	for _, tool := range list.Result.Tools {
		if tool.Name == toolJSONSchema202012 {
			if string(tool.InputSchema) != jsonSchema202012 {
				t.Errorf("%s input schema on the wire:\n%s\nwant\n%s", tool.Name, tool.InputSchema, jsonSchema202012)
			}
			return
		}
	}
	t.Fatalf("no %s in tools/list:\n%s", toolJSONSchema202012, out)
}

// resultText joins the text items of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
