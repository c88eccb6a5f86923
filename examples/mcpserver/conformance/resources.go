package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Resource URIs and the template, exactly as the suite's scenarios read
// them.
const (
	resourceStaticText   = "test://static-text"
	resourceStaticBinary = "test://static-binary"
	resourceWatched      = "test://watched-resource"
	templateData         = "test://template/{id}/data"
)

// staticText is the content of test://static-text.
const staticText = "This is the content of the static text resource."

// resources returns the direct resources. test://watched-resource exists so
// that resources/subscribe and resources/unsubscribe name a real resource.
func resources() []server.ServerResource {
	text := func(uri, name, description, body string) server.ServerResource {
		return server.ServerResource{
			Resource: mcp.NewResource(uri, name, mcp.WithResourceDescription(description), mcp.WithMIMEType("text/plain")),
			Handler: func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: body}}, nil
			},
		}
	}
	return []server.ServerResource{
		text(resourceStaticText, "static-text", "A fixed text resource.", staticText),
		{
			Resource: mcp.NewResource(resourceStaticBinary, "static-binary",
				mcp.WithResourceDescription("A fixed binary resource: a 1x1 red PNG."), mcp.WithMIMEType(pngMIME)),
			Handler: func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.BlobResourceContents{URI: resourceStaticBinary, MIMEType: pngMIME, Blob: redPixelPNG}}, nil
			},
		},
		text(resourceWatched, "watched-resource", "A resource clients may subscribe to.", "Watched resource content."),
	}
}

// resourceTemplates returns the resource templates.
func resourceTemplates() []server.ServerResourceTemplate {
	return []server.ServerResourceTemplate{{
		Template: mcp.NewResourceTemplate(templateData, "template-data",
			mcp.WithTemplateDescription("JSON data for the id in the URI."), mcp.WithTemplateMIMEType("application/json")),
		Handler: readTemplateData,
	}}
}

// templateDataBody is what test://template/{id}/data returns.
type templateDataBody struct {
	ID           string `json:"id"`
	TemplateTest bool   `json:"templateTest"`
	Data         string `json:"data"`
}

// readTemplateData reads test://template/{id}/data: mcp-go has matched the
// URI and put the id in the arguments.
func readTemplateData(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id := templateArg(req.Params.Arguments["id"])
	if id == "" {
		return nil, fmt.Errorf("%s: no id in %q", templateData, req.Params.URI)
	}
	body, err := json.Marshal(templateDataBody{ID: id, TemplateTest: true, Data: "Data for ID: " + id})
	if err != nil {
		return nil, fmt.Errorf("%s: encode: %w", templateData, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(body)}}, nil
}

// templateArg returns a matched URI template variable as a string: mcp-go
// gives a string for a simple variable and a list for an exploded one.
func templateArg(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []string:
		if len(v) == 1 {
			return v[0]
		}
	}
	return ""
}
