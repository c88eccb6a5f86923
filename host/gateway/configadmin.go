package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/host/config"
	"github.com/antler-mcp/antler/host/configfile"
	"github.com/antler-mcp/antler/host/dispatch"
	"github.com/antler-mcp/antler/host/envvar"
	"github.com/antler-mcp/antler/host/launchpolicy"
)

// The config admin API (DeerFlow's routers/mcp.py): GET, PUT and PATCH
// /api/mcp/config, POST /api/mcp/config/servers, PUT /api/mcp/config/server
// and DELETE /api/mcp/config/servers/{name}. Every mutation is one
// configfile.File.Update cycle, so the in-process lock and the sidecar flock
// are held across read → merge → launch policy → validate → atomic write →
// cache reset, and two host processes never lose each other's update. The
// file is edited as raw, ordered JSON: $VAR placeholders, unknown top-level
// keys, skills and key order survive; only mcpServers changes.

// adminError is an answer decided inside an update cycle (nothing written).
type adminError struct {
	code int
	msg  string
}

func (e *adminError) Error() string { return e.msg }

func adminFail(code int, format string, args ...any) *adminError {
	return &adminError{code: code, msg: fmt.Sprintf(format, args...)}
}

func invalidConfig(format string, args ...any) *adminError {
	return adminFail(http.StatusBadRequest, "Invalid MCP configuration: "+format, args...)
}

// configFile returns the guard of the configuration file. Without one in
// the options it is the file the tool cache resolves right now (the --config
// flag, $ANTLER_EXTENSIONS_CONFIG, $DEER_FLOW_EXTENSIONS_CONFIG_PATH,
// ./extensions_config.json, ./mcp_config.json); when none exists yet it is
// ./extensions_config.json in the working directory, which is where the
// cache looks first, so a file created through the API is the one served.
// Guards for one path share their locks, so a guard per request is fine.
func (s *Server) configFile() (*configfile.File, error) {
	if s.cfgFile != nil {
		return s.cfgFile, nil
	}
	path, err := s.cache.ConfigPath()
	if err != nil {
		return nil, err
	}
	if path == "" {
		dir, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("resolve extensions config path: %w", err)
		}
		path = filepath.Join(dir, config.DefaultNames[0])
	}
	return configfile.New(path, s.log).WithMaxSize(config.MaxFileSize), nil
}

// launchPolicy is the stdio launch policy; without one in the options it is
// read from the environment on every request, as DeerFlow reads its
// allowlist variable.
func (s *Server) launchPolicy() *launchpolicy.Policy {
	if s.policy != nil {
		return s.policy
	}
	return launchpolicy.FromEnv(os.LookupEnv)
}

// envAllowlist is the set of variables a request may newly reference as
// "$NAME"; without one in the options it is read from the environment on
// every request, like the launch policy.
func (s *Server) envAllowlist() config.EnvAllowlist {
	if s.envRefs != nil {
		return *s.envRefs
	}
	return config.EnvAllowlistFromEnv(os.LookupEnv)
}

// rawDoc is the configuration document being edited.
type rawDoc struct {
	root    *config.Object
	servers *config.Object // the mcpServers object inside root
}

// loadDoc reads the raw document. A missing file is an empty document
// (mcpServers and skills, as DeerFlow creates it).
func loadDoc(data []byte, exists bool) (*rawDoc, error) {
	if !exists {
		root := config.NewObject()
		servers := config.NewObject()
		root.Set("mcpServers", servers)
		root.Set("skills", config.NewObject())
		return &rawDoc{root: root, servers: servers}, nil
	}
	if !utf8.Valid(data) {
		return nil, invalidConfig("Extensions configuration is not valid JSON: the file is not UTF-8 text")
	}
	tree, err := config.ParseJSON(data)
	if err != nil {
		return nil, invalidConfig("Extensions configuration is not valid JSON: %s", jsonProblem(err))
	}
	root, ok := tree.(*config.Object)
	if !ok {
		return nil, invalidConfig("Extensions configuration must be a JSON object")
	}
	// The loader reads DeerFlow's field name when the alias is absent; edit
	// the key the file uses.
	key := "mcpServers"
	if _, ok := root.Get(key); !ok {
		if _, ok := root.Get("mcp_servers"); ok {
			key = "mcp_servers"
		}
	}
	v, _ := root.Get(key)
	switch t := v.(type) {
	case *config.Object:
		return &rawDoc{root: root, servers: t}, nil
	case nil: // absent or null: no servers yet
		servers := config.NewObject()
		root.Set(key, servers)
		return &rawDoc{root: root, servers: servers}, nil
	default:
		return nil, invalidConfig("`%s` must be a JSON object", key)
	}
}

// storedServer returns the raw entry name, which must be an object.
func (d *rawDoc) storedServer(name string) (*config.Object, bool, error) {
	v, ok := d.servers.Get(name)
	if !ok {
		return nil, false, nil
	}
	o, isObj := v.(*config.Object)
	if !isObj {
		return nil, true, invalidConfig("mcpServers.%s: must be an object, got %s", name, config.JSONType(v))
	}
	return o, true, nil
}

// replaceServers swaps the servers object for a new one in the same place.
func (d *rawDoc) replaceServers(servers *config.Object) {
	for _, k := range d.root.Keys() {
		if v, _ := d.root.Get(k); v == any(d.servers) {
			d.root.Set(k, servers)
			d.servers = servers
			return
		}
	}
	d.root.Set("mcpServers", servers)
	d.servers = servers
}

// launchCheck is one server the launch policy must pass before the write:
// full for the enabled ones (and everything in a bulk PUT), command shape
// and environment only for a disabled one. keepUnchanged (a bulk PUT) skips
// a server that launches exactly as the stored one does and is not being
// enabled: the operator's file (or an earlier screened call) put it there.
type launchCheck struct {
	name          string
	server        *config.Object
	full          bool
	keepUnchanged bool
}

// mutation is one config edit.
type mutation struct {
	// create: a missing file is an empty document (PUT, POST); otherwise
	// missing is the 404 message.
	create  bool
	missing string
	// failure prefixes the 500 message, as DeerFlow words it.
	failure string
	// apply edits the document and names the servers to screen.
	apply func(doc *rawDoc) ([]launchCheck, error)
}

// mutate runs one update cycle and answers with the masked servers.
func (s *Server) mutate(c echo.Context, m mutation) error {
	file, err := s.configFile()
	if err != nil {
		return fail(c, http.StatusNotFound, "%s", err.Error())
	}
	policy := s.launchPolicy()
	allow := s.envAllowlist()
	var servers *config.Object
	err = file.Update(c.Request().Context(), func(current []byte, exists bool) ([]byte, error) {
		if !exists && !m.create {
			return nil, adminFail(http.StatusNotFound, "%s", m.missing)
		}
		doc, err := loadDoc(current, exists)
		if err != nil {
			return nil, err
		}
		// The entries as stored, before apply edits doc in place (PATCH).
		orig, err := loadDoc(current, exists)
		if err != nil {
			return nil, err
		}
		checks, err := m.apply(doc)
		if err != nil {
			return nil, err
		}
		// Every endpoint: no $VAR reaches the file unless the stored entry
		// already holds it at the same field or the operator allowlisted it.
		for _, name := range doc.servers.Keys() {
			o, ok := rawGet(doc.servers, name).(*config.Object)
			if !ok {
				continue // stored as is; the loader reports it
			}
			stored, _ := rawGet(orig.servers, name).(*config.Object)
			if err := config.CheckEnvRefs(name, o, stored, allow); err != nil {
				return nil, err
			}
		}
		data, err := encodeDocument(doc.root)
		if err != nil {
			return nil, err
		}
		if n := int64(len(data)); n > config.MaxFileSize {
			// The host would refuse to load it and keep serving the old tools.
			return nil, adminFail(http.StatusBadRequest, "Invalid MCP configuration: the file would be %d bytes, above the limit of %d bytes", n, config.MaxFileSize)
		}
		// The loader the host uses, with the process environment: $VAR
		// references resolve exactly as they will when the file is loaded.
		ext, err := config.Parse(data, envvar.OS)
		if err != nil {
			return nil, invalidConfigError(err)
		}
		// What is stored, read the same way, to tell what a request changes.
		// A stored file the loader refuses counts as no stored servers, so
		// everything is screened.
		var before *config.Extensions
		if exists {
			before, _ = config.Parse(current, envvar.OS)
		}
		if err := driversUnchanged(before, ext); err != nil {
			return nil, err
		}
		for _, chk := range checks {
			srv, ok := ext.Server(chk.name)
			if !ok {
				continue
			}
			old, _ := before.Server(chk.name)
			if chk.keepUnchanged && old != nil && sameLaunch(old, srv) && (old.Enabled || !srv.Enabled) {
				continue
			}
			// The policy sees what the host will launch: $VAR references
			// resolved, the transport alias applied.
			l := launchOf(srv, old)
			if chk.full {
				err = policy.Check(l)
			} else {
				err = policy.CheckShape(l)
			}
			if err != nil {
				return nil, err
			}
		}
		servers = maskedServers(data, doc)
		return data, nil
	}, s.cache.Rebuild) // only the sessions of servers whose launch changed are retired
	if err != nil {
		return s.configFailure(c, err, m.failure)
	}
	return c.JSON(http.StatusOK, map[string]any{"mcp_servers": servers})
}

func (s *Server) configFailure(c echo.Context, err error, prefix string) error {
	var ae *adminError
	var me *config.MergeError
	var pe *launchpolicy.Error
	var re *config.EnvRefError
	switch {
	case errors.As(err, &re):
		return fail(c, http.StatusBadRequest, "Invalid MCP configuration: %s", re.Error())
	case errors.As(err, &ae):
		return fail(c, ae.code, "%s", ae.msg)
	case errors.As(err, &me):
		return fail(c, http.StatusBadRequest, "%s", me.Error())
	case errors.As(err, &pe):
		return fail(c, http.StatusBadRequest, "%s", pe.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fail(c, http.StatusServiceUnavailable, "%s: the request ended while waiting for the configuration lock", prefix)
	}
	msg := dispatch.Redact(err.Error())
	s.log.Error("config admin: write failed", "request_id", requestIDFrom(c), "error", msg)
	return fail(c, http.StatusInternalServerError, "%s: %s", prefix, msg)
}

// maskedServers renders the written document as GET shows it. A document the
// env-resolving loader accepts can still fail with placeholders left in
// (say an enum spelled "$MODE"); its servers are then masked as written.
func maskedServers(data []byte, doc *rawDoc) *config.Object {
	if ext, err := config.Parse(data, config.Placeholders); err == nil {
		return ext.MaskedServers()
	}
	out := config.NewObject()
	for _, name := range doc.servers.Keys() {
		v, _ := doc.servers.Get(name)
		if o, ok := v.(*config.Object); ok {
			out.Set(name, config.MaskRawServer(o))
		}
	}
	return out
}

// valueEcho matches the quoted value the loader's messages end with (an
// enum's "got ..."), which the API does not repeat.
var valueEcho = regexp.MustCompile(`, got "(?:[^"\\]|\\.)*"$`)

// invalidConfigError turns a loader error into DeerFlow's 400: every
// problem as "<field path>: <message>", joined with "; ", never a value.
func invalidConfigError(err error) error {
	var probs config.Problems
	if errors.As(err, &probs) {
		parts := make([]string, 0, len(probs))
		for _, p := range probs {
			msg := valueEcho.ReplaceAllString(p.Message, "")
			if p.Path == "" {
				parts = append(parts, msg)
			} else {
				parts = append(parts, p.Path+": "+msg)
			}
		}
		return invalidConfig("%s", strings.Join(parts, "; "))
	}
	var syn *config.SyntaxError
	if errors.As(err, &syn) {
		return invalidConfig("Extensions configuration is not valid JSON: %s", jsonProblem(syn.Err))
	}
	return err
}

// driversUnchanged refuses a write that adds or changes a plugin task
// driver (a task toolset's or a server's): a driver is code the host runs (a process or a Wasm module
// with call_tool), and like mcpInterceptors it is set in the file by the
// operator, never through the config API. Removing one is allowed.
func driversUnchanged(before, after *config.Extensions) error {
	// Every server, enabled or not: a disabled one is staged code.
	drivers := func(e *config.Extensions, visit func(field, key, driver string) error) error {
		if e == nil {
			return nil
		}
		for _, s := range e.Servers {
			if len(s.Driver) > 0 {
				if err := visit(fmt.Sprintf("mcpServers.%s.driver", s.Name), s.Name, string(s.Driver)); err != nil {
					return err
				}
			}
			for i, ts := range s.TaskToolsets {
				if len(ts.Driver) > 0 {
					field := fmt.Sprintf("mcpServers.%s.task_toolsets[%d].driver", s.Name, i)
					if err := visit(field, s.Name+"\x00"+ts.Name, string(ts.Driver)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	was := map[string]string{}
	_ = drivers(before, func(_, key, driver string) error { was[key] = driver; return nil })
	return drivers(after, func(field, key, driver string) error {
		if old, ok := was[key]; !ok || old != driver {
			return adminFail(http.StatusBadRequest, "Invalid MCP configuration: %s: a task driver runs code on the host, so it is set in the configuration file, not through the config API (as mcpInterceptors are)", field)
		}
		return nil
	})
}

// launchOf describes a parsed server to the launch policy. Its working
// directory counts as the request's choice unless stored, the entry as the
// file holds it now (nil for a new one), is a stdio server with the same
// one.
func launchOf(srv, stored *config.Server) launchpolicy.Launch {
	l := launchpolicy.Launch{Server: srv.Name, Type: srv.Type, Command: srv.Command, Args: srv.Args, Cwd: srv.Cwd}
	if stored != nil && stored.IsStdio() && stored.Cwd == srv.Cwd {
		l.Cwd = ""
	}
	for _, p := range srv.Env {
		l.EnvNames = append(l.EnvNames, p.Key)
	}
	return l
}

// sameLaunch reports whether two parsed servers start the same process:
// transport, command, args, env (names and values) and working directory,
// compared as the loader reads them ($VAR references resolved, the
// transport defaulted and its alias applied, masked secrets already
// restored by the merge), so that a GET → PUT round trip is no change
// however the file spells the entry.
func sameLaunch(a, b *config.Server) bool {
	return a.Type == b.Type && a.Command == b.Command && slices.Equal(a.Args, b.Args) &&
		maps.Equal(a.Env.Map(), b.Env.Map()) && len(a.Env) == len(b.Env) && a.Cwd == b.Cwd
}

func rawGet(o *config.Object, key string) any {
	v, _ := o.Get(key)
	return v
}

// serverEnabled is the raw "enabled" (true when absent, as the loader reads it).
func serverEnabled(o *config.Object) bool {
	if b, ok := rawGet(o, "enabled").(bool); ok {
		return b
	}
	return true
}

func checkFor(name string, o *config.Object, bulk bool) launchCheck {
	return launchCheck{name: name, server: o, full: bulk || serverEnabled(o), keepUnchanged: bulk}
}

// ---- request bodies ----

// readObject reads a JSON object body with key order kept; allowed lists its
// fields, every one required.
func readObject(c echo.Context, allowed ...string) (*config.Object, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return nil, adminFail(http.StatusBadRequest, "request body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, adminFail(http.StatusBadRequest, "request body must be a JSON object with %s", strings.Join(allowed, ", "))
	}
	if !utf8.Valid(body) {
		return nil, adminFail(http.StatusBadRequest, "request body is not UTF-8 text")
	}
	tree, err := config.ParseJSON(body)
	if err != nil {
		return nil, adminFail(http.StatusBadRequest, "request body must be a JSON object: %s", jsonProblem(err))
	}
	o, ok := tree.(*config.Object)
	if !ok {
		return nil, adminFail(http.StatusBadRequest, "request body must be a JSON object, got %s", config.JSONType(tree))
	}
	for _, k := range o.Keys() {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			return nil, adminFail(http.StatusBadRequest, "unknown field %q (allowed: %s)", truncateField(k), strings.Join(allowed, ", "))
		}
	}
	for _, a := range allowed {
		if _, ok := o.Get(a); !ok {
			return nil, adminFail(http.StatusBadRequest, "%s: is required", a)
		}
	}
	return o, nil
}

// readServers reads a {"mcp_servers": {name: server}} body.
func readServers(c echo.Context) (*config.Object, error) {
	body, err := readObject(c, "mcp_servers")
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
		return nil, adminFail(http.StatusBadRequest, "mcp_servers: must be a JSON object, got %s", config.JSONType(v))
	}
	for _, name := range m.Keys() {
		sv, _ := m.Get(name)
		if _, ok := sv.(*config.Object); !ok {
			return nil, adminFail(http.StatusBadRequest, "mcp_servers.%s: must be a JSON object, got %s", name, config.JSONType(sv))
		}
	}
	return m, nil
}

func (s *Server) badBody(c echo.Context, err error) error {
	return s.configFailure(c, err, "Invalid request")
}

// ---- endpoints ----

// putConfig answers PUT /api/mcp/config: the whole server set. Servers not
// in the body are removed; a server already stored is merged with it
// (config.MergeBulk: masked secrets restored, omitted routing, tools,
// user_auth, headers_from_context and extras kept). Every server in the
// body passes the full launch policy, enabled or not, unless it launches
// exactly as the stored one does and is not being enabled (see sameLaunch).
func (s *Server) putConfig(c echo.Context) error {
	incoming, err := readServers(c)
	if err != nil {
		return s.badBody(c, err)
	}
	return s.mutate(c, mutation{
		create:  true,
		failure: "Failed to update MCP configuration",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			next := config.NewObject()
			var checks []launchCheck
			for _, name := range incoming.Keys() {
				v, _ := incoming.Get(name)
				in := v.(*config.Object)
				stored, ok, err := doc.storedServer(name)
				if err != nil {
					return nil, err
				}
				var merged *config.Object
				if ok {
					merged, err = config.MergeServer(in, stored, config.MergeBulk)
				} else {
					merged, err = in, config.CheckNoMaskedSecrets(in)
				}
				if err != nil {
					return nil, err
				}
				next.Set(name, merged)
				checks = append(checks, checkFor(name, merged, true))
			}
			doc.replaceServers(next)
			return checks, nil
		},
	})
}

// patchConfig answers PATCH /api/mcp/config: set "enabled" of one raw entry
// and nothing else. Enabling runs the full launch policy on that server;
// disabling never does.
func (s *Server) patchConfig(c echo.Context) error {
	body, err := readObject(c, "server_name", "enabled")
	if err != nil {
		return s.badBody(c, err)
	}
	name, ok := rawGet(body, "server_name").(string)
	if !ok || name == "" {
		return fail(c, http.StatusBadRequest, "server_name: must be a non-empty string")
	}
	enabled, ok := rawGet(body, "enabled").(bool)
	if !ok {
		return fail(c, http.StatusBadRequest, "enabled: must be true or false")
	}
	notFound := fmt.Sprintf("MCP server '%s' not found", name)
	return s.mutate(c, mutation{
		missing: notFound,
		failure: "Failed to update MCP server state",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			stored, ok, err := doc.storedServer(name)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, adminFail(http.StatusNotFound, "%s", notFound)
			}
			stored.Set("enabled", enabled)
			if enabled {
				return []launchCheck{{name: name, server: stored, full: true}}, nil
			}
			return nil, nil
		},
	})
}

// addServers answers POST /api/mcp/config/servers: add servers, 409 when a
// name exists. A new server may hold no "***" placeholder. Enabled ones pass
// the full launch policy, disabled ones the command shape and environment.
func (s *Server) addServers(c echo.Context) error {
	incoming, err := readServers(c)
	if err != nil {
		return s.badBody(c, err)
	}
	return s.mutate(c, mutation{
		create:  true,
		failure: "Failed to add MCP servers",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			for _, name := range incoming.Keys() {
				if _, exists := doc.servers.Get(name); exists {
					return nil, adminFail(http.StatusConflict, "MCP server '%s' already exists", name)
				}
			}
			var checks []launchCheck
			for _, name := range incoming.Keys() {
				v, _ := incoming.Get(name)
				in := v.(*config.Object)
				if err := config.CheckNoMaskedSecrets(in); err != nil {
					return nil, err
				}
				doc.servers.Set(name, in)
				checks = append(checks, checkFor(name, in, false))
			}
			return checks, nil
		},
	})
}

// putServer answers PUT /api/mcp/config/server: replace one existing server
// completely (config.MergeReplace: omitted fields reset, explicit "***"
// restores only the matching stored secret), in its place among its
// siblings.
func (s *Server) putServer(c echo.Context) error {
	body, err := readObject(c, "server_name", "server")
	if err != nil {
		return s.badBody(c, err)
	}
	name, ok := rawGet(body, "server_name").(string)
	if !ok {
		return fail(c, http.StatusBadRequest, "server_name: must be a string")
	}
	in, ok := rawGet(body, "server").(*config.Object)
	if !ok {
		return fail(c, http.StatusBadRequest, "server: must be a JSON object, got %s", config.JSONType(rawGet(body, "server")))
	}
	return s.mutate(c, mutation{
		missing: "MCP configuration not found",
		failure: "Failed to update MCP server",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			stored, ok, err := doc.storedServer(name)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, adminFail(http.StatusNotFound, "MCP server '%s' not found", name)
			}
			merged, err := config.MergeServer(in, stored, config.MergeReplace)
			if err != nil {
				return nil, err
			}
			doc.servers.Set(name, merged)
			return []launchCheck{checkFor(name, merged, false)}, nil
		},
	})
}

// deleteServer answers DELETE /api/mcp/config/servers/{name}; the name is
// the rest of the path (it may hold an escaped slash, or be empty).
func (s *Server) deleteServer(c echo.Context) error {
	name := c.Param("*")
	if c.Request().URL.RawPath != "" {
		// Echo routed on the escaped path: undo the escaping once.
		n, err := url.PathUnescape(name)
		if err != nil {
			return fail(c, http.StatusBadRequest, "server name: invalid escaping in the path")
		}
		name = n
	}
	return s.mutate(c, mutation{
		missing: "MCP configuration not found",
		failure: "Failed to delete MCP server",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			if _, ok := doc.servers.Get(name); !ok {
				return nil, adminFail(http.StatusNotFound, "MCP server '%s' not found", name)
			}
			doc.servers.Delete(name)
			return nil, nil
		},
	})
}

// ---- writing ----

// encodeDocument writes an ordered JSON document as DeerFlow does
// (json.dump with indent=2), keeping key order and number spelling, without
// HTML escaping (URLs keep their "&"), with a final newline.
func encodeDocument(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeValue(&b, v, 0); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func writeValue(b *bytes.Buffer, v any, depth int) error {
	indent := func(d int) {
		b.WriteByte('\n')
		for range d {
			b.WriteString("  ")
		}
	}
	switch t := v.(type) {
	case *config.Object:
		if t.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, k := range t.Keys() {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			if err := writeString(b, k); err != nil {
				return err
			}
			b.WriteString(": ")
			val, _ := t.Get(k)
			if err := writeValue(b, val, depth+1); err != nil {
				return err
			}
		}
		indent(depth)
		b.WriteByte('}')
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			if err := writeValue(b, e, depth+1); err != nil {
				return err
			}
		}
		indent(depth)
		b.WriteByte(']')
	case string:
		return writeString(b, t)
	case json.Number:
		if !json.Valid([]byte(t)) {
			return fmt.Errorf("invalid number in document")
		}
		b.WriteString(string(t))
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	default:
		data, err := json.Marshal(t)
		if err != nil {
			return err
		}
		b.Write(data)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) error {
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(sb.Bytes(), []byte("\n")))
	return nil
}
