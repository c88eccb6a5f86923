package gateway

import (
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/apierror"
)

// pprofPrefix is where the profiles are served when Options.Pprof is set.
const pprofPrefix = "/debug/pprof/"

// routePprof serves net/http/pprof under /debug/pprof/ to admin principals:
// a profile shows what every caller is doing, and the CPU profile and trace
// cost the whole host while they run.
func (s *Server) routePprof() {
	g := s.echo.Group("/debug/pprof", s.authenticate, adminOnly(pprofPrefix))
	g.GET("/cmdline", echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	g.GET("/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	g.GET("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.POST("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.GET("/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	g.GET("/*", echo.WrapHandler(http.HandlerFunc(pprof.Index))) // the index and the named profiles (heap, goroutine, ...)
}

// adminOnly refuses what it guards, named by path in the message, to
// every principal but an admin.
func adminOnly(path string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !principalFrom(c).IsAdmin() {
				return apierror.New(http.StatusForbidden, "Admin privileges required for %s.", path)
			}
			return next(c)
		}
	}
}
