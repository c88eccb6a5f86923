package gateway

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/openapi"
)

// openAPIDocument answers GET /openapi.json with the REST API's OpenAPI
// document, info.version the host's. Like /healthz it needs no key: it
// describes the routes the README documents and holds no secret or
// configuration. The document is built once, on the first request.
func openAPIDocument(version string) echo.HandlerFunc {
	doc := sync.OnceValues(func() ([]byte, error) { return openapi.Document(version) })
	return func(c echo.Context) error {
		b, err := doc()
		if err != nil {
			return err
		}
		return c.JSONBlob(http.StatusOK, b)
	}
}
