// Package openapitest checks recorded HTTP responses against the gateway's
// OpenAPI document with kin-openapi's validator, for tests only: the
// production binary serves the document but never links the validator.
package openapitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/antler-mcp/antler/internal/openapi"
)

// eventStream is the media type of the documented event stream, whose body
// lasts as long as the stream: only its status and headers are checked.
const eventStream = "text/event-stream"

func init() {
	// The stream's body is never read here (see Check); the empty string
	// stands for it.
	openapi3filter.RegisterBodyDecoder(eventStream, openapi3filter.PlainBodyDecoder)
}

// Load parses and validates an OpenAPI document.
func Load(doc []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	t, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	return t, nil
}

// Checker validates responses against one document.
type Checker struct {
	doc    *openapi3.T
	router routers.Router
}

// NewChecker builds a Checker for doc (nil: the gateway's document).
func NewChecker(doc []byte) (*Checker, error) {
	if doc == nil {
		doc = openapi.Source
	}
	t, err := Load(doc)
	if err != nil {
		return nil, err
	}
	r, err := legacy.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("route the OpenAPI document: %w", err)
	}
	return &Checker{doc: t, router: r}, nil
}

// Documented reports whether req's method and path are an operation of
// the document.
func (c *Checker) Documented(req *http.Request) bool {
	_, _, err := c.router.FindRoute(req)
	return err == nil
}

// Check validates one response to req: that its status is documented for
// the operation, its documented headers are there and well-formed, its
// Content-Type is one the document lists and its body matches that
// schema. An event stream's body is not checked. A request that is no
// documented operation is an error too (see Documented).
func (c *Checker) Check(req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s is not in the OpenAPI document: %w", req.Method, req.URL.Path, err)
	}
	if isEventStream(header) {
		body = nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		return fmt.Errorf("%s %s answered %d (%s) against the OpenAPI document: %w", req.Method, req.URL.Path, status, header.Get("Content-Type"), err)
	}
	return nil
}

// Operations lists the document's operations as "METHOD /path".
func (c *Checker) Operations() []string {
	var out []string
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == eventStream
}

// Transport is an http.RoundTripper that checks every response to a
// documented operation against the document. A response that does not
// match is recorded and its round trip fails with the mismatch, so the
// test that sent it fails where it sent it. Requests to anything else (an
// upstream, the MCP endpoint, an unknown path) pass through unchecked.
type Transport struct {
	Base    http.RoundTripper
	Checker *Checker

	mu       sync.Mutex
	failures []string
	seen     map[string]int
}

// RoundTrip sends req and checks its response.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(req)
	if err != nil || !t.Checker.Documented(req) {
		return resp, err
	}
	var body []byte
	if !isEventStream(resp.Header) {
		body, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read the response to %s %s: %w", req.Method, req.URL.Path, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	route, _, _ := t.Checker.router.FindRoute(req)
	err = t.Checker.Check(req, resp.StatusCode, resp.Header, body)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]int{}
	}
	t.seen[fmt.Sprintf("%s %s %d", route.Method, route.Path, resp.StatusCode)]++
	if err != nil {
		t.failures = append(t.failures, err.Error())
		_ = resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// Failures are the mismatches recorded so far.
func (t *Transport) Failures() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.failures...)
}

// Seen counts the checked responses by "METHOD /path status".
func (t *Transport) Seen() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.seen))
	for k, v := range t.seen {
		out[k] = v
	}
	return out
}

// Summary describes what was checked: each operation with the statuses
// its responses had, and the operations no response reached.
func (t *Transport) Summary() string {
	seen := t.Seen()
	var b strings.Builder
	total := 0
	for _, op := range t.Checker.Operations() {
		var statuses []string
		for k, n := range seen {
			if rest, ok := strings.CutPrefix(k, op+" "); ok {
				statuses = append(statuses, fmt.Sprintf("%s×%d", rest, n))
				total += n
			}
		}
		sort.Strings(statuses)
		if len(statuses) == 0 {
			statuses = []string{"none"}
		}
		fmt.Fprintf(&b, "  %s: %s\n", op, strings.Join(statuses, " "))
	}
	return fmt.Sprintf("openapi: %d responses checked against the document\n%s", total, b.String())
}
