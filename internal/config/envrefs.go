package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/antler-mcp/antler/internal/envvar"
)

// The loader resolves every whole-string "$NAME" value of the file from the
// host process's environment, so a "$NAME" the config API writes would be a
// way to read any host variable (a header or env value carries it to a
// server the caller chose). CheckEnvRefs admits a reference only where the
// operator already put it, or for a name the operator allowlisted.

// EnvAllowlistEnv names the host variable listing (comma-separated) the
// variables a config API caller may reference with "$NAME".
const EnvAllowlistEnv = "ANTLER_CONFIG_API_ENV_ALLOWLIST"

// EnvAllowlist is the set of variable names the config API may introduce as
// "$NAME" references. The zero value allows none.
type EnvAllowlist struct{ names map[string]bool }

// NewEnvAllowlist allows exactly the given names (empty ones are ignored).
func NewEnvAllowlist(names ...string) EnvAllowlist {
	a := EnvAllowlist{names: map[string]bool{}}
	for _, n := range names {
		if n != "" {
			a.names[n] = true
		}
	}
	return a
}

// EnvAllowlistFromEnv reads EnvAllowlistEnv through lookup: names separated
// by commas, surrounding spaces trimmed.
func EnvAllowlistFromEnv(lookup envvar.Lookup) EnvAllowlist {
	v, _ := lookup(EnvAllowlistEnv)
	var names []string
	for _, item := range strings.Split(v, ",") {
		names = append(names, strings.TrimSpace(item))
	}
	return NewEnvAllowlist(names...)
}

// Allows reports whether name may be introduced.
func (a EnvAllowlist) Allows(name string) bool { return a.names[name] }

// EnvRefError is a "$NAME" reference the config API refuses. It names the
// field and the variable, never the variable's value.
type EnvRefError struct {
	// Path is the field, as "mcpServers.<server>.headers.X-Leak" or
	// "mcpServers.<server>.args[1]".
	Path string
	// Name is the referenced variable.
	Name string
}

func (e *EnvRefError) Error() string {
	return fmt.Sprintf("%s: the environment reference $%s is not allowed here: the config API keeps a $VAR only where the stored server already has the same value at the same field; ask the operator to add %s to %s",
		e.Path, e.Name, e.Name, EnvAllowlistEnv)
}

// CheckEnvRefs walks every string value of server (the raw entry about to
// be written under name, at any depth: headers, env, args, oauth, extras)
// and refuses a whole-string "$NAME" reference (envvar.Resolve's rule)
// unless stored (the entry the file holds under the same name now, nil for
// a new server) has the identical string at the same key path while the
// server keeps its destination (SameDestination), or allow allows the name. A reference therefore cannot move to another key, list
// position or server, while GET → PUT round trips, edits of other fields
// and masked "***" restores keep the operator's references. Errors are
// *EnvRefError.
func CheckEnvRefs(name string, server, stored *Object, allow EnvAllowlist) error {
	if stored != nil && !SameDestination(server, stored) {
		// A kept reference would follow the server to wherever the
		// caller now points it.
		stored = nil
	}
	return checkEnvRefs("mcpServers."+name, server, stored, allow)
}

func checkEnvRefs(path string, v, stored any, allow EnvAllowlist) error {
	switch t := v.(type) {
	case *Object:
		so, _ := stored.(*Object)
		for _, k := range t.Keys() {
			sv, _ := so.Get(k)
			if err := checkEnvRefs(path+"."+k, rawAt(t, k), sv, allow); err != nil {
				return err
			}
		}
	case []any:
		sl, _ := stored.([]any)
		for i, e := range t {
			var se any
			if i < len(sl) {
				se = sl[i]
			}
			if err := checkEnvRefs(path+"["+strconv.Itoa(i)+"]", e, se, allow); err != nil {
				return err
			}
		}
	case string:
		_, ref, isRef := envvar.Resolve(t, noEnv)
		if !isRef || allow.Allows(ref) {
			return nil
		}
		if s, ok := stored.(string); ok && s == t {
			return nil
		}
		return &EnvRefError{Path: path, Name: ref}
	}
	return nil
}

// noEnv resolves nothing: CheckEnvRefs needs a reference's name, never a
// value.
func noEnv(string) (string, bool) { return "", false }
