package gateway

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/dashboard"
	"github.com/antler-mcp/antler/internal/openapi"
	"github.com/antler-mcp/antler/internal/openapi/openapitest"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// TestEveryRouteIsDocumented walks the routes the gateway registers (with
// every optional route on) and the document's operations: each route is an
// operation with the same method and path template, or one of the
// document's x-antler-undocumented-routes, and each operation is a route.
// A route added without documenting it fails here, as the second case
// shows by adding one; the third removes an operation from the document.
func TestEveryRouteIsDocumented(t *testing.T) {
	var withoutTools map[string]any
	if err := json.Unmarshal(openapi.Source, &withoutTools); err != nil {
		t.Fatal(err)
	}
	delete(withoutTools["paths"].(map[string]any), "/api/mcp/tools")
	trimmed, err := json.Marshal(withoutTools)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		doc   []byte
		extra func(e *echo.Echo)
		want  []string
	}{
		{name: "the gateway", doc: openapi.Source},
		{name: "an undocumented route", doc: openapi.Source, extra: func(e *echo.Echo) {
			e.PUT("/api/mcp/tools/:name", func(echo.Context) error { return nil })
		}, want: []string{"route PUT /api/mcp/tools/:name is neither in the OpenAPI document"}},
		{name: "a route the document lost", doc: trimmed, want: []string{
			"route GET /api/mcp/tools is neither in the OpenAPI document"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := toolcache.New(toolcache.Options{ConfigPath: filepath.Join(t.TempDir(), "extensions_config.json")})
			t.Cleanup(cache.Close)
			s := New(everyRoute(cache))
			t.Cleanup(s.Close)
			if tc.extra != nil {
				tc.extra(s.echo)
			}
			got := routeProblems(t, s.echo.Routes(), tc.doc)
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(tc.want))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("problem %q, want %q...", got[i], tc.want[i])
				}
			}
		})
	}
	// And the other way: an operation in the document that no route serves.
	cache := toolcache.New(toolcache.Options{ConfigPath: filepath.Join(t.TempDir(), "extensions_config.json")})
	t.Cleanup(cache.Close)
	s := New(everyRoute(cache))
	t.Cleanup(s.Close)
	var routes []*echo.Route
	for _, r := range s.echo.Routes() {
		if r.Path != "/api/mcp/routing-hints" {
			routes = append(routes, r)
		}
	}
	got := routeProblems(t, routes, openapi.Source)
	if want := "the OpenAPI document has GET /api/mcp/routing-hints, which the gateway does not serve"; len(got) != 1 || got[0] != want {
		t.Errorf("problems %q, want [%q]", got, want)
	}
}

// routeProblems compares routes with doc's operations and says what does
// not match.
func routeProblems(t *testing.T, routes []*echo.Route, doc []byte) []string {
	t.Helper()
	checker, err := openapitest.NewChecker(doc)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, op := range checker.Operations() {
		documented[op] = true
	}
	excluded := undocumentedRoutes(t, doc)

	var problems []string
	registered := map[string]bool{}
	for _, r := range routes {
		if r.Method == echo.RouteNotFound { // a group's catch-all 404
			continue
		}
		op := r.Method + " " + r.Path
		if excluded.covers(r.Method, r.Path) {
			continue
		}
		matched := ""
		for d := range documented {
			if sameRoute(op, d) {
				matched = d
			}
		}
		if matched == "" {
			problems = append(problems, "route "+op+" is neither in the OpenAPI document (internal/openapi/openapi.json) nor in its x-antler-undocumented-routes")
			continue
		}
		registered[matched] = true
	}
	var stale []string
	for d := range documented {
		if !registered[d] {
			stale = append(stale, "the OpenAPI document has "+d+", which the gateway does not serve")
		}
	}
	sort.Strings(stale)
	if len(registered) == 0 {
		problems = append(problems, "no route matched: the walk is broken")
	}
	return append(problems, stale...)
}

// sameRoute compares an Echo route with a documented operation: the same
// method and segments, Echo's ":name" the document's "{name}", and Echo's
// trailing "*" any one "{parameter}".
func sameRoute(route, op string) bool {
	rm, rp, _ := strings.Cut(route, " ")
	om, opath, _ := strings.Cut(op, " ")
	if rm != om {
		return false
	}
	rs, os := strings.Split(rp, "/"), strings.Split(opath, "/")
	if len(rs) != len(os) {
		return false
	}
	for i := range rs {
		param := strings.HasPrefix(os[i], "{") && strings.HasSuffix(os[i], "}")
		switch {
		case rs[i] == "*" && i == len(rs)-1:
			if !param {
				return false
			}
		case strings.HasPrefix(rs[i], ":"):
			if !param || rs[i][1:] != os[i][1:len(os[i])-1] {
				return false
			}
		case rs[i] != os[i] || param:
			return false
		}
	}
	return true
}

// excludedRoutes is the document's x-antler-undocumented-routes: paths
// (a trailing "/*" covers everything below) with their methods.
type excludedRoutes []struct {
	Path    string   `json:"path"`
	Methods []string `json:"methods"`
	Reason  string   `json:"reason"`
}

func undocumentedRoutes(t *testing.T, source []byte) excludedRoutes {
	t.Helper()
	var doc struct {
		Routes excludedRoutes `json:"x-antler-undocumented-routes"`
	}
	if err := json.Unmarshal(source, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Routes {
		if r.Reason == "" || len(r.Methods) == 0 {
			t.Errorf("x-antler-undocumented-routes: %s needs methods and a reason", r.Path)
		}
	}
	return doc.Routes
}

func (ex excludedRoutes) covers(method, path string) bool {
	for _, r := range ex {
		under := strings.HasSuffix(r.Path, "/*") && strings.HasPrefix(path+"/", strings.TrimSuffix(r.Path, "*"))
		if r.Path != path && !under {
			continue
		}
		for _, m := range r.Methods {
			if m == method {
				return true
			}
		}
	}
	return false
}

// TestRouteWalkMatcher checks the walk's matching on the path shapes the
// gateway uses.
func TestRouteWalkMatcher(t *testing.T) {
	for _, tc := range []struct {
		route, op string
		want      bool
	}{
		{"GET /api/mcp/tools", "GET /api/mcp/tools", true},
		{"POST /api/mcp/tools", "GET /api/mcp/tools", false},
		{"POST /api/mcp/tools/:name/call", "POST /api/mcp/tools/{name}/call", true},
		{"POST /api/mcp/tools/:name/call", "POST /api/mcp/tools/{tool}/call", false},
		{"DELETE /api/mcp/config/servers/*", "DELETE /api/mcp/config/servers/{name}", true},
		{"DELETE /api/mcp/config/servers/*", "DELETE /api/mcp/config/servers/all", false},
		{"GET /api/mcp/tools/extra", "GET /api/mcp/tools", false},
		{"GET /api/threads/:thread_id/mcp-tasks/events", "GET /api/threads/{thread_id}/mcp-tasks/{task_id}", false},
	} {
		if got := sameRoute(tc.route, tc.op); got != tc.want {
			t.Errorf("sameRoute(%q, %q) = %v, want %v", tc.route, tc.op, got, tc.want)
		}
	}
	ex := excludedRoutes{{Path: "/debug/pprof/*", Methods: []string{http.MethodGet}}, {Path: "/mcp", Methods: []string{http.MethodPost}}}
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/debug/pprof/*", true},
		{"GET", "/debug/pprof/profile", true},
		{"POST", "/debug/pprof/symbol", false},
		{"GET", "/debug/pprofx", false},
		{"POST", "/mcp", true},
		{"GET", "/mcp", false},
		{"POST", "/mcp/x", false},
	} {
		if got := ex.covers(tc.method, tc.path); got != tc.want {
			t.Errorf("covers(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// everyRoute are options that turn every optional route on, as antler
// serve does: the MCP door, the pages, metrics and pprof.
func everyRoute(cache *toolcache.Cache) Options {
	return Options{Cache: cache, Auth: principal.New(nil), Pprof: true, MCP: func(DoorSlots) MCPDoor { return nopDoor{} },
		Pages:   map[string]http.Handler{openapi.Path: openapi.Handler("test"), dashboard.Prefix + "*": dashboard.Handler()},
		Metrics: http.NotFoundHandler()}
}

// nopDoor stands in for the MCP door (mcpserver imports this package's
// importers): only its routes matter here.
type nopDoor struct{}

func (nopDoor) Streamable() http.Handler              { return http.NotFoundHandler() }
func (nopDoor) SSE() http.Handler                     { return http.NotFoundHandler() }
func (nopDoor) Messages() http.Handler                { return http.NotFoundHandler() }
func (nopDoor) CORSHeaders() (allow, expose []string) { return nil, nil }
func (nopDoor) Close()                                {}
