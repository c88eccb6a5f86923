// Package plugins turns mcpInterceptors entries into loaded plugins: a
// "wasm:<path>" string, a "process:<path>" string or an object
// {kind, path, config, grants, servers, timeout_ms, max_memory_mb, isolate}.
// DeerFlow's Python "module:attr" entries are skipped with a warning, as
// DeerFlow skips an import that fails.
package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

// Kinds of plugin.
const (
	KindWasm    = "wasm"
	KindProcess = "process"
	KindExtism  = "extism"
)

// Isolation modes.
const (
	IsolateShared  = "shared"
	IsolatePerUser = "per_user"
)

// Grants are what a plugin may see or use beyond the call itself.
type Grants struct {
	// Secrets lists the secret keys whose values the plugin receives ("*"
	// for all). Without a grant a plugin sees only secret names.
	Secrets []string `json:"secrets"`
	Clock   bool     `json:"clock"`
	Random  bool     `json:"random"`
}

// Allows reports whether the secret named key is granted.
func (g Grants) Allows(key string) bool {
	for _, s := range g.Secrets {
		if s == "*" || s == key {
			return true
		}
	}
	return false
}

// Entry is one parsed mcpInterceptors entry.
type Entry struct {
	// Name identifies the entry in messages: its path in the file.
	Name        string
	Kind        string
	Path        string // absolute
	Config      json.RawMessage
	Grants      Grants
	Servers     []string // empty: every server
	Timeout     time.Duration
	MaxMemoryMB int
	Isolate     string
}

// Applies reports whether the entry intercepts calls to server.
func (e *Entry) Applies(server string) bool {
	if len(e.Servers) == 0 {
		return true
	}
	for _, s := range e.Servers {
		if s == server {
			return true
		}
	}
	return false
}

// ParseEntry reads one entry. name is its path in the file (for messages);
// dir resolves relative paths. skip is true for a DeerFlow "module:attr"
// entry, with warning saying why.
func ParseEntry(name string, raw json.RawMessage, dir string) (e Entry, skip bool, warning string, err error) {
	e = Entry{Name: name, Isolate: IsolateShared}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		kind, path, ok := strings.Cut(s, ":")
		switch {
		case ok && (kind == KindWasm || kind == KindProcess || kind == KindExtism) && path != "":
			e.Kind, e.Path = kind, path
		case ok && !strings.ContainsAny(s, "/\\") && path != "":
			return e, true, fmt.Sprintf("%s: %q is a DeerFlow Python import (module:attr), which Antler cannot load; use \"wasm:<path>\" or \"process:<path>\"; skipping it", name, s), nil
		default:
			return e, false, "", fmt.Errorf("%s: must be \"wasm:<path>\", \"process:<path>\" or an object", name)
		}
	} else {
		var obj struct {
			Kind        string          `json:"kind"`
			Path        string          `json:"path"`
			Config      json.RawMessage `json:"config"`
			Grants      Grants          `json:"grants"`
			Servers     []string        `json:"servers"`
			TimeoutMS   int             `json:"timeout_ms"`
			MaxMemoryMB int             `json:"max_memory_mb"`
			Isolate     string          `json:"isolate"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&obj); err != nil {
			return e, false, "", fieldProblem(name, err)
		}
		e.Kind, e.Path, e.Config, e.Grants, e.Servers = obj.Kind, obj.Path, obj.Config, obj.Grants, obj.Servers
		switch {
		case e.Kind != KindWasm && e.Kind != KindProcess && e.Kind != KindExtism:
			return e, false, "", fmt.Errorf("%s.kind: must be one of \"wasm\", \"process\", \"extism\"", name)
		case e.Path == "":
			return e, false, "", fmt.Errorf("%s.path: is required", name)
		case obj.TimeoutMS < 0 || obj.TimeoutMS > 600_000:
			return e, false, "", fmt.Errorf("%s.timeout_ms: must be between 1 and 600000", name)
		case obj.MaxMemoryMB < 0 || obj.MaxMemoryMB > 4096:
			return e, false, "", fmt.Errorf("%s.max_memory_mb: must be between 1 and 4096", name)
		}
		e.Timeout = time.Duration(obj.TimeoutMS) * time.Millisecond
		e.MaxMemoryMB = obj.MaxMemoryMB
		switch obj.Isolate {
		case "", IsolateShared:
		case IsolatePerUser:
			e.Isolate = IsolatePerUser
			if err := isolationProblem(e.Kind, e.Isolate); err != nil {
				return e, false, "", fmt.Errorf("%s.%w", name, err)
			}
		default:
			return e, false, "", fmt.Errorf("%s.isolate: must be \"shared\" or \"per_user\"", name)
		}
		if len(e.Config) > 0 && !json.Valid(e.Config) {
			return e, false, "", fmt.Errorf("%s.config: must be JSON", name)
		}
	}
	if !filepath.IsAbs(e.Path) {
		e.Path = filepath.Join(dir, e.Path)
	}
	e.Path = filepath.Clean(e.Path)
	return e, false, "", nil
}

// isolationProblem is why isolate cannot be honoured for a plugin of kind,
// or nil: only a Wasm module has instances per user; a process or Extism
// plugin serves every user from one, so per_user there would be a promise
// the host does not keep.
func isolationProblem(kind, isolate string) error {
	if isolate == IsolatePerUser && kind != KindWasm {
		return fmt.Errorf("isolate: \"per_user\" is for wasm plugins only (a %s plugin serves every user from one instance)", kind)
	}
	return nil
}

// fieldProblem names the field a decoding error is about by its path in the
// file (mcpInterceptors[1].timeout_ms), as the other checks do.
func fieldProblem(name string, err error) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		if typ.Field != "" {
			name += "." + typ.Field
		}
		return fmt.Errorf("%s: must be %s", name, describe(typ.Type))
	}
	return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "json: "))
}

// describe names a Go type as a JSON value.
func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}
