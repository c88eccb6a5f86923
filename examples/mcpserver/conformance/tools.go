package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Tool names, exactly as the suite's scenarios call them.
const (
	toolSimpleText       = "test_simple_text"
	toolImage            = "test_image_content"
	toolAudio            = "test_audio_content"
	toolEmbeddedResource = "test_embedded_resource"
	toolMixedContent     = "test_multiple_content_types"
	toolLogging          = "test_tool_with_logging"
	toolError            = "test_error_handling"
	toolProgress         = "test_tool_with_progress"
	toolSampling         = "test_sampling"
	toolElicitation      = "test_elicitation"
	toolSEP1034Defaults  = "test_elicitation_sep1034_defaults"
	toolSEP1330Enums     = "test_elicitation_sep1330_enums"
	toolJSONSchema202012 = "json_schema_2020_12_tool"
)

// Fixed texts the scenarios look for.
const (
	simpleText        = "This is a simple text response for testing."
	errorText         = "This tool intentionally returns an error for testing"
	embeddedText      = "This is an embedded resource content."
	embeddedURI       = "test://embedded-resource"
	mixedURI          = "test://mixed-content-resource"
	mixedJSON         = `{"test":"data","value":123}`
	samplingMaxTokens = 100
)

// logSteps are the info-level messages test_tool_with_logging sends, in
// order, one step apart.
var logSteps = []string{"Tool execution started", "Tool processing data", "Tool execution completed"}

// progressSteps are the progress values test_tool_with_progress reports,
// out of progressTotal, one step apart.
var progressSteps = []float64{0, 50, 100}

const progressTotal = 100

// step is the pause between successive log or progress notifications: long
// enough that they reach the client as separate messages during the call.
const step = 50 * time.Millisecond

// inputID names the one input request (sampling or elicitation) a tool asks
// for; the answer comes back under the same id.
const inputID = "answer"

// jsonSchema202012 is the input schema of json_schema_2020_12_tool, served
// verbatim: the scenario checks that $schema, $defs and additionalProperties
// survive every hop to the client.
const jsonSchema202012 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`

// sideEffectFree annotates a tool as read-only, idempotent and closed-world;
// mcp-go's defaults would describe every tool as destructive.
var sideEffectFree = mcp.WithToolAnnotation(mcp.ToolAnnotation{
	ReadOnlyHint:    mcp.ToBoolPtr(true),
	DestructiveHint: mcp.ToBoolPtr(false),
	IdempotentHint:  mcp.ToBoolPtr(true),
	OpenWorldHint:   mcp.ToBoolPtr(false),
})

// tools returns every conformance tool. Those that notify the client during
// the call (logging, progress) send through srv.
func tools(srv *server.MCPServer) []server.ServerTool {
	noArgs := func(name, description string, handler server.ToolHandlerFunc) server.ServerTool {
		return server.ServerTool{Tool: mcp.NewTool(name, sideEffectFree, mcp.WithDescription(description)), Handler: handler}
	}
	return []server.ServerTool{
		noArgs(toolSimpleText, "Returns a fixed text.", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(simpleText), nil
		}),
		noArgs(toolImage, "Returns a 1x1 red PNG as image content.", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return content(mcp.NewImageContent(redPixelPNG, pngMIME)), nil
		}),
		noArgs(toolAudio, "Returns 10 ms of silence as WAV audio content.", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return content(mcp.NewAudioContent(silenceWAV, wavMIME)), nil
		}),
		noArgs(toolEmbeddedResource, "Returns an embedded text resource.", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return content(mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: embeddedURI, MIMEType: "text/plain", Text: embeddedText})), nil
		}),
		noArgs(toolMixedContent, "Returns text, an image and an embedded JSON resource in one result.", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return content(
				mcp.NewTextContent("Multiple content types test:"),
				mcp.NewImageContent(redPixelPNG, pngMIME),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: mixedURI, MIMEType: "application/json", Text: mixedJSON}),
			), nil
		}),
		noArgs(toolLogging, "Sends three info log notifications, 50 ms apart, while it runs.", func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return handleLogging(ctx, srv)
		}),
		noArgs(toolError, "Always fails with a tool error (isError).", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError(errorText), nil
		}),
		noArgs(toolProgress, "Reports progress 0, 50 and 100 of 100, 50 ms apart, when the call carries a progress token.", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return handleProgress(ctx, srv, req)
		}),
		{
			Tool: mcp.NewTool(toolSampling, sideEffectFree,
				mcp.WithDescription("Asks the client's LLM (sampling/createMessage) to answer prompt and returns the answer."),
				mcp.WithString("prompt", mcp.Required(), mcp.Description("The prompt to send to the LLM.")),
			),
			Handler: handleSampling,
		},
		{
			Tool: mcp.NewTool(toolElicitation, sideEffectFree,
				mcp.WithDescription("Asks the user (elicitation/create) for a username and an email address and returns the answer."),
				mcp.WithString("message", mcp.Required(), mcp.Description("The message to show the user.")),
			),
			Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				message, err := req.RequireString("message")
				if err != nil {
					return mcp.NewToolResultError(err.Error()), nil
				}
				return elicit(ctx, req, message, contactSchema, "User response")
			},
		},
		noArgs(toolSEP1034Defaults, "Elicits a form whose every field (string, integer, number, enum, boolean) has a default (SEP-1034).", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, req, "Please review and update the form fields with defaults", defaultsSchema, "Elicitation completed")
		}),
		noArgs(toolSEP1330Enums, "Elicits a form with each of the five enum shapes (SEP-1330).", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, req, "Please pick from each list", enumsSchema, "Elicitation completed")
		}),
		{
			// NewTool would fill in a structured input schema, which mcp-go
			// refuses to marshal next to a raw one.
			Tool: mcp.NewToolWithRawSchema(toolJSONSchema202012, "Tool with JSON Schema 2020-12 features", json.RawMessage(jsonSchema202012)),
			Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args, err := json.Marshal(req.GetArguments())
				if err != nil {
					return nil, fmt.Errorf("%s: encode arguments: %w", toolJSONSchema202012, err)
				}
				return mcp.NewToolResultText("Received: " + string(args)), nil
			},
		},
	}
}

// content is a successful result made of the given content items.
func content(items ...mcp.Content) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: items}
}

// handleLogging implements test_tool_with_logging. The messages reach the
// client only at or above the level it set with logging/setLevel (mcp-go
// starts sessions at "error"). Like progress, every message, the last one
// included, is followed by a pause: mcp-go's stdio server writes
// notifications from another goroutine than results, so a message sent just
// before the result could reach a proxy after the call had ended.
func handleLogging(ctx context.Context, srv *server.MCPServer) (*mcp.CallToolResult, error) {
	for _, msg := range logSteps {
		n := mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "conformance", msg)
		if err := srv.SendLogMessageToClient(ctx, n); err != nil {
			return nil, fmt.Errorf("%s: send log message: %w", toolLogging, err)
		}
		if err := pause(ctx, step); err != nil {
			return nil, err
		}
	}
	return mcp.NewToolResultText(fmt.Sprintf("Tool with logging completed: sent %d log messages", len(logSteps))), nil
}

// handleProgress implements test_tool_with_progress. Without a progress
// token it only pauses, as it would after each notification.
//
// Every notification, the last one included, is followed by a pause: over
// streamable HTTP mcp-go hands a session's notifications to whichever stream
// takes them first, the call's own POST stream or the standalone GET stream,
// and a progress notification that reaches the client after its call's result
// is dropped (the client has stopped listening for that token). The pause
// gives the last one the same lead over the result as the others.
func handleProgress(ctx context.Context, srv *server.MCPServer, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	for _, p := range progressSteps {
		if token != nil {
			params := map[string]any{"progressToken": token, "progress": p, "total": progressTotal}
			if err := srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params); err != nil {
				return nil, fmt.Errorf("%s: send progress: %w", toolProgress, err)
			}
		}
		if err := pause(ctx, step); err != nil {
			return nil, err
		}
	}
	return mcp.NewToolResultText(fmt.Sprintf("Tool with progress completed: %d steps", len(progressSteps))), nil
}

// pause waits for d, or returns ctx's error when the call is cancelled first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
}

// handleSampling implements test_sampling. It asks for the completion as a
// multi round-trip input request, so the same handler serves clients of
// either protocol era: mcp-go turns it into a sampling/createMessage request
// for clients before 2026-07-28 and calls the handler again with the answer.
func handleSampling(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	prompt, err := req.RequireString("prompt")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if answer := server.SamplingResponse(req.Params.InputResponses, inputID); answer != nil {
		return mcp.NewToolResultText("LLM response: " + textOf(answer.Content)), nil
	}
	if caps := clientCapabilities(ctx); caps == nil || caps.Sampling == nil {
		return mcp.NewToolResultError(toolSampling + ": the client did not declare the sampling capability"), nil
	}
	params := mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(prompt)}},
		MaxTokens: samplingMaxTokens,
	}
	return server.NewInputRequestBuilder("").Sample(inputID, params).ToolResult(), nil
}

// elicit asks the user to fill in schema, as a multi round-trip input request
// (see handleSampling), and reports the answer as
// "<label>: action=<action>, content=<JSON>".
func elicit(ctx context.Context, req mcp.CallToolRequest, message string, schema map[string]any, label string) (*mcp.CallToolResult, error) {
	if answer := server.ElicitationResponse(req.Params.InputResponses, inputID); answer != nil {
		got, err := json.Marshal(answer.Content)
		if err != nil {
			return nil, fmt.Errorf("%s: encode the user's answer: %w", req.Params.Name, err)
		}
		return mcp.NewToolResultText(fmt.Sprintf("%s: action=%s, content=%s", label, answer.Action, got)), nil
	}
	if caps := clientCapabilities(ctx); caps == nil || caps.Elicitation == nil {
		return mcp.NewToolResultError(req.Params.Name + ": the client did not declare the elicitation capability"), nil
	}
	params := mcp.ElicitationParams{Message: message, RequestedSchema: schema}
	return server.NewInputRequestBuilder("").Elicit(inputID, params).ToolResult(), nil
}

// clientCapabilities returns what the client declared: per request from
// protocol 2026-07-28 on, at initialize before. Nil means none are known.
func clientCapabilities(ctx context.Context) *mcp.ClientCapabilities {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		caps := s.GetClientCapabilities()
		return &caps
	}
	return nil
}

// textOf returns the text of a sampling answer's content, or a rendering of
// whatever else it holds.
func textOf(c any) string {
	if tc, ok := mcp.AsTextContent(c); ok {
		return tc.Text
	}
	return mcp.GetTextFromContent(c)
}

// contactSchema is the form test_elicitation asks for.
var contactSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"username": map[string]any{"type": "string", "description": "User's response"},
		"email":    map[string]any{"type": "string", "description": "User's email address"},
	},
	"required": []string{"username", "email"},
}

// defaultsSchema is the SEP-1034 form: one field of each primitive type, each
// with a default.
var defaultsSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
		"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
		"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
		"status":   map[string]any{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
		"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
	},
	"required": []string{},
}

// enumsSchema is the SEP-1330 form: the five ways to offer a choice.
var enumsSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		// Single choice, values only.
		"untitledSingle": map[string]any{"type": "string", "description": "Pick one option",
			"enum": []string{"option1", "option2", "option3"}},
		// Single choice, each value with a display title.
		"titledSingle": map[string]any{"type": "string", "description": "Pick one titled option",
			"oneOf": titled("value", "Option")},
		// Single choice titled the deprecated way, with parallel enumNames.
		"legacyEnum": map[string]any{"type": "string", "description": "Pick one (legacy titles)",
			"enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
		// Several choices, values only.
		"untitledMulti": map[string]any{"type": "array", "description": "Pick any options",
			"items": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
		// Several choices, each value with a display title.
		"titledMulti": map[string]any{"type": "array", "description": "Pick any titled choices",
			"items": map[string]any{"anyOf": titled("value", "Choice")}},
	},
	"required": []string{},
}

// titled returns three {const, title} choices: <prefix>1 titled
// "First <noun>", and so on.
func titled(prefix, noun string) []map[string]any {
	ordinals := []string{"First", "Second", "Third"}
	out := make([]map[string]any, len(ordinals))
	for i, o := range ordinals {
		out[i] = map[string]any{"const": fmt.Sprintf("%s%d", prefix, i+1), "title": o + " " + noun}
	}
	return out
}
