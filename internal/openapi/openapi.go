// Package openapi holds the OpenAPI 3.1 document of the gateway's REST API,
// written by hand in openapi.json and served at GET /openapi.json. Tests
// keep it true: every route the gateway registers is documented (and every
// documented operation exists), and every response of the gateway's
// end-to-end tests validates against it (see openapitest).
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// Source is the document as written, with info.version "dev".
//
//go:embed openapi.json
var Source []byte

// Document returns the document with info.version set to version (the
// build's; "" keeps "dev").
func Document(version string) ([]byte, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(Source))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	info, ok := doc["info"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi document: info is not an object")
	}
	if version != "" {
		info["version"] = version
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // descriptions keep their "<" and "&"
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	return out.Bytes(), nil
}

// Path is where the gateway serves the document.
const Path = "/openapi.json"

// Handler answers with the document, info.version set to version. Like
// /healthz it needs no key: it describes the routes the README documents
// and holds no secret or configuration. The document is built once, on the
// first request.
func Handler(version string) http.Handler {
	doc := sync.OnceValues(func() ([]byte, error) { return Document(version) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		b, err := doc()
		if err != nil { // the embedded document is tested to parse
			w.WriteHeader(http.StatusInternalServerError)
			b = []byte(`{"error":"the OpenAPI document is unavailable"}`)
		}
		_, _ = w.Write(b)
	})
}
