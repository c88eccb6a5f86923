package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Prompt names, exactly as the suite's scenarios get them.
const (
	promptSimple           = "test_simple_prompt"
	promptWithArguments    = "test_prompt_with_arguments"
	promptEmbeddedResource = "test_prompt_with_embedded_resource"
	promptWithImage        = "test_prompt_with_image"
)

// prompts returns every conformance prompt.
func prompts() []server.ServerPrompt {
	return []server.ServerPrompt{
		{
			Prompt: mcp.NewPrompt(promptSimple, mcp.WithPromptDescription("A prompt without arguments.")),
			Handler: func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult("A simple prompt", []mcp.PromptMessage{
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("This is a simple prompt for testing.")),
				}), nil
			},
		},
		{
			Prompt: mcp.NewPrompt(promptWithArguments,
				mcp.WithPromptDescription("A prompt that substitutes two arguments; arg1 offers completions."),
				mcp.WithArgument("arg1", mcp.ArgumentDescription("First test argument"), mcp.RequiredArgument()),
				mcp.WithArgument("arg2", mcp.ArgumentDescription("Second test argument"), mcp.RequiredArgument()),
			),
			Handler: func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				arg1, arg2 := req.Params.Arguments["arg1"], req.Params.Arguments["arg2"]
				text := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", arg1, arg2)
				return mcp.NewGetPromptResult("A prompt with arguments", []mcp.PromptMessage{
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text)),
				}), nil
			},
		},
		{
			Prompt: mcp.NewPrompt(promptEmbeddedResource,
				mcp.WithPromptDescription("A prompt that embeds the resource named by resourceUri."),
				mcp.WithArgument("resourceUri", mcp.ArgumentDescription("URI of the resource to embed"), mcp.RequiredArgument()),
			),
			Handler: func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				uri := req.Params.Arguments["resourceUri"]
				if uri == "" {
					return nil, fmt.Errorf("%s: argument resourceUri is required", promptEmbeddedResource)
				}
				return mcp.NewGetPromptResult("A prompt with an embedded resource", []mcp.PromptMessage{
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewEmbeddedResource(mcp.TextResourceContents{
						URI: uri, MIMEType: "text/plain", Text: "Embedded resource content for testing.",
					})),
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Please process the embedded resource above.")),
				}), nil
			},
		},
		{
			Prompt: mcp.NewPrompt(promptWithImage, mcp.WithPromptDescription("A prompt that carries a 1x1 red PNG.")),
			Handler: func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult("A prompt with an image", []mcp.PromptMessage{
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewImageContent(redPixelPNG, pngMIME)),
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Please analyze the image above.")),
				}), nil
			},
		},
	}
}

// arg1Values are the completions offered for test_prompt_with_arguments'
// arg1, filtered by the prefix typed so far.
var arg1Values = []string{"paris", "park", "party", "test", "testing", "tested"}

// promptCompletions answers completion/complete for prompt arguments: arg1
// of test_prompt_with_arguments completes from arg1Values; every other
// argument has no suggestions (an empty list, not an error).
type promptCompletions struct{}

// CompletePromptArgument implements server.PromptCompletionProvider.
func (promptCompletions) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	values := []string{}
	if prompt == promptWithArguments && arg.Name == "arg1" {
		for _, v := range arg1Values {
			if strings.HasPrefix(v, arg.Value) {
				values = append(values, v)
			}
		}
	}
	return &mcp.Completion{Values: values, Total: len(values)}, nil
}
