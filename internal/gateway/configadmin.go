package gateway

import (
	"context"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/configadmin"
)

// The config admin API's routes (see configadmin): each decodes the route,
// calls the one method and writes its answer; a failure is the method's
// *apierror.Error.

func (s *Server) getConfig(c echo.Context) error {
	return configAnswer(c)(s.admin.Get(c.Request().Context()))
}

func (s *Server) putConfig(c echo.Context) error {
	return configAnswer(c)(s.admin.Replace(editCtx(c), c.Request().Body))
}

func (s *Server) patchConfig(c echo.Context) error {
	return configAnswer(c)(s.admin.SetEnabled(editCtx(c), c.Request().Body))
}

func (s *Server) addServers(c echo.Context) error {
	return configAnswer(c)(s.admin.Add(editCtx(c), c.Request().Body))
}

func (s *Server) putServer(c echo.Context) error {
	return configAnswer(c)(s.admin.ReplaceServer(editCtx(c), c.Request().Body))
}

// deleteServer answers DELETE /api/mcp/config/servers/{name}; the name is
// the rest of the path (it may hold an escaped slash, or be empty).
func (s *Server) deleteServer(c echo.Context) error {
	name := c.Param("*")
	if c.Request().URL.RawPath != "" {
		// Echo routed on the escaped path: undo the escaping once.
		n, err := url.PathUnescape(name)
		if err != nil {
			return apierror.New(http.StatusBadRequest, "server name: invalid escaping in the path")
		}
		name = n
	}
	return configAnswer(c)(s.admin.Delete(editCtx(c), name))
}

// configAnswer writes a config admin method's answer.
func configAnswer(c echo.Context) func(configadmin.Servers, error) error {
	return func(res configadmin.Servers, err error) error {
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}

// editCtx is the request's context naming who edits and through which
// route, for the audit log.
func editCtx(c echo.Context) context.Context {
	r := c.Request()
	return configadmin.WithActor(r.Context(), principalFrom(c).User, r.Method+" "+c.Path())
}
