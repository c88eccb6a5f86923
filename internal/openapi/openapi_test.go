package openapi_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/openapi"
	"github.com/antler-mcp/antler/internal/openapi/openapitest"
)

// TestDocumentIsValidOpenAPI31 loads the document with kin-openapi and
// validates it as OpenAPI 3.1 (refs resolved, schemas well-formed,
// operation ids unique, path parameters declared).
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc, err := openapitest.Load(openapi.Source)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() || !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Fatalf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	if doc.Info.Version != "dev" {
		t.Errorf("info.version as written = %q, want dev (the build sets it)", doc.Info.Version)
	}
}

// TestDocumentCarriesTheVersion checks that Document sets info.version and
// changes nothing else, and that the result is still a valid document.
func TestDocumentCarriesTheVersion(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"", "dev"},
		{"v1.4.0", "v1.4.0"},
		{`v0.0.0-20261202 "quoted" <&>`, `v0.0.0-20261202 "quoted" <&>`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			got, err := openapi.Document(tc.version)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := openapitest.Load(got)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Info.Version != tc.want {
				t.Errorf("info.version = %q, want %q", doc.Info.Version, tc.want)
			}
			var written, served map[string]any
			if err := json.Unmarshal(openapi.Source, &written); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &served); err != nil {
				t.Fatal(err)
			}
			written["info"].(map[string]any)["version"] = tc.want
			if !reflect.DeepEqual(written, served) {
				t.Error("Document changed more than info.version")
			}
		})
	}
}
