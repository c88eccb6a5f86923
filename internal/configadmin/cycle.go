package configadmin

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/launchpolicy"
)

// badRequest prefixes an unexpected failure to read a request body.
const badRequest = "Invalid request"

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
func (a *Admin) mutate(ctx context.Context, m mutation) (Servers, error) {
	file, err := a.file()
	if err != nil {
		return Servers{}, err
	}
	policy := a.launchPolicy()
	allow := a.envAllowlist()
	var (
		servers *config.Object
		edited  []audit.ServerChange
	)
	err = file.Update(ctx, func(current []byte, exists bool) ([]byte, error) {
		if !exists && !m.create {
			return nil, apierror.New(http.StatusNotFound, "%s", m.missing)
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
			return nil, apierror.New(http.StatusBadRequest, "Invalid MCP configuration: the file would be %d bytes, above the limit of %d bytes", n, config.MaxFileSize)
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
		if err := screen(policy, checks, before, ext); err != nil {
			return nil, err
		}
		servers = maskedServers(data, doc)
		edited = changes(before, ext)
		return data, nil
	}, a.opts.Tools.Rebuild) // only the sessions of servers whose launch changed are retired
	if err != nil {
		err = answer(err, m.failure)
		a.opts.Metrics.ConfigEditRejected(rejection(err))
		return Servers{}, err
	}
	user, action := actorOf(ctx)
	a.opts.Audit.ConfigChange(user, action, file.Path(), edited)
	return Servers{MCPServers: servers}, nil
}

// answer is err as the API answers it: DeerFlow's 400 for what the request
// got wrong, 503 when the request ended while waiting for the lock, and a
// 500 prefixed with failure (redacted) for anything else.
func answer(err error, failure string) error {
	var ae *apierror.Error
	var me *config.MergeError
	var pe *launchpolicy.Error
	var re *config.EnvRefError
	switch {
	case errors.As(err, &re):
		return apierror.Wrap(err, http.StatusBadRequest, "Invalid MCP configuration: %s", re.Error())
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &me):
		return apierror.Wrap(err, http.StatusBadRequest, "%s", me.Error())
	case errors.As(err, &pe):
		return apierror.Wrap(err, http.StatusBadRequest, "%s", pe.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apierror.Wrap(err, http.StatusServiceUnavailable, "%s: the request ended while waiting for the configuration lock", failure)
	}
	return apierror.Wrap(err, http.StatusInternalServerError, "%s: %s", failure, dispatch.Redact(err.Error()))
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

// invalidConfig is DeerFlow's 400 for a document the loader refuses.
func invalidConfig(format string, args ...any) *apierror.Error {
	return apierror.New(http.StatusBadRequest, "Invalid MCP configuration: "+format, args...)
}

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
		return invalidConfig("Extensions configuration is not valid JSON: %s", apierror.JSONProblem(syn.Err))
	}
	return err
}
