package configadmin

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/config"
)

// readObject reads a JSON object body with key order kept; allowed lists its
// fields, every one required. Its messages name the field, never a value.
func readObject(r io.Reader, allowed ...string) (*config.Object, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, apierror.Wrap(err, http.StatusBadRequest, "request body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apierror.New(http.StatusBadRequest, "request body must be a JSON object with %s", strings.Join(allowed, ", "))
	}
	if !utf8.Valid(body) {
		return nil, apierror.New(http.StatusBadRequest, "request body is not UTF-8 text")
	}
	tree, err := config.ParseJSON(body)
	if err != nil {
		return nil, apierror.New(http.StatusBadRequest, "request body must be a JSON object: %s", apierror.JSONProblem(err))
	}
	o, ok := tree.(*config.Object)
	if !ok {
		return nil, apierror.New(http.StatusBadRequest, "request body must be a JSON object, got %s", config.JSONType(tree))
	}
	for _, k := range o.Keys() {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			return nil, apierror.New(http.StatusBadRequest, "unknown field %q (allowed: %s)", apierror.TruncateField(k), strings.Join(allowed, ", "))
		}
	}
	for _, a := range allowed {
		if _, ok := o.Get(a); !ok {
			return nil, apierror.New(http.StatusBadRequest, "%s: is required", a)
		}
	}
	return o, nil
}

// readServers reads a {"mcp_servers": {name: server}} body.
func readServers(r io.Reader) (*config.Object, error) {
	body, err := readObject(r, "mcp_servers")
	if err != nil {
		return nil, err
	}
	return serverMap(body)
}

// serverMap reads the mcp_servers field: an object of server objects.
func serverMap(body *config.Object) (*config.Object, error) {
	v, _ := body.Get("mcp_servers")
	m, ok := v.(*config.Object)
	if !ok {
		return nil, apierror.New(http.StatusBadRequest, "mcp_servers: must be a JSON object, got %s", config.JSONType(v))
	}
	for _, name := range m.Keys() {
		sv, _ := m.Get(name)
		if _, ok := sv.(*config.Object); !ok {
			return nil, apierror.New(http.StatusBadRequest, "mcp_servers.%s: must be a JSON object, got %s", name, config.JSONType(sv))
		}
	}
	return m, nil
}
