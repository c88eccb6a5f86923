package config

import (
	"regexp"
	"strings"
)

// Mask is the placeholder shown instead of a secret value.
const Mask = "***"

// sensitiveKey matches a normalised key that names a secret.
var sensitiveKey = regexp.MustCompile(`(?i)(^|_)(api_key|apikey|access_key|private_key|client_secret|secret|token|password|passwd|credential|credentials|authorization|bearer)(_|$)`)

// IsSensitiveKey reports whether an unknown field's name marks a secret. The
// key is normalised exactly as DeerFlow's _normalize_config_key does (an
// underscore before a capitalised word and at lower-to-upper boundaries, so
// "AWSSecretKey" is aws_secret_key; lower case; every run of other
// characters to one underscore; outer underscores trimmed) and matched
// against DeerFlow's list (token, secret, password, api_key, …).
func IsSensitiveKey(key string) bool {
	s := camelWord.ReplaceAllString(key, "${1}_${2}")
	s = camelBoundary.ReplaceAllString(s, "${1}_${2}")
	s = nonAlnumRun.ReplaceAllString(strings.ToLower(s), "_")
	return sensitiveKey.MatchString(strings.Trim(s, "_"))
}

var (
	camelWord     = regexp.MustCompile(`(.)([A-Z][a-z]+)`)
	camelBoundary = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	nonAlnumRun   = regexp.MustCompile(`[^a-z0-9]+`)
)

// MaskedServers renders every server as the config API shows it: all fields
// with their defaults, unknown keys kept, and secrets masked as DeerFlow
// masks them, plus the password or user info and secret query values of
// url and oauth.token_url (env and header values, OAuth client_secret and refresh_token
// as null, extra_token_params and user_auth.users values, and any unknown
// field whose name marks a secret, at any depth). headers_from_context holds
// only names and is shown as is.
func (e *Extensions) MaskedServers() *Object {
	out := NewObject()
	for _, s := range e.Servers {
		out.Set(s.Name, maskServer(clone(s.fileObject(true)).(*Object)))
	}
	return out
}

func maskServer(o *Object) *Object {
	for _, k := range []string{"env", "headers"} {
		maskValues(o, k)
	}
	maskURLField(o, "url")
	if oa, ok := mustObj(o, "oauth"); ok {
		maskURLField(oa, "token_url")
		for _, k := range []string{"client_secret", "refresh_token"} {
			if v, _ := oa.Get(k); v != nil {
				oa.Set(k, nil)
			}
		}
		maskValues(oa, "extra_token_params")
		maskExtras(oa, oauthFields)
	}
	if ua, ok := mustObj(o, "user_auth"); ok {
		maskValues(ua, "users")
		maskExtras(ua, userAuthFields)
	}
	if ch, ok := mustObj(o, "headers_from_context"); ok {
		maskExtras(ch, contextHeadersFields)
	}
	// A plugin task driver's entry (the server's, each task toolset's) is a
	// declared field, but its config is the driver's and may hold its
	// keys: searched at any depth like an unknown field.
	for _, d := range drivers(o) {
		d.set(maskDeep(d.value))
	}
	if tools, ok := mustObj(o, "tools"); ok {
		for _, name := range tools.Keys() {
			if t, ok := mustObj(tools, name); ok {
				maskExtras(t, keySet("routing"))
			}
		}
	}
	maskExtras(o, serverFields)
	return o
}

func mustObj(o *Object, key string) (*Object, bool) {
	v, _ := o.Get(key)
	c, ok := v.(*Object)
	return c, ok
}

// maskURLField masks the secret parts of the URL string under key.
func maskURLField(o *Object, key string) {
	if u, ok := rawAt(o, key).(string); ok {
		o.Set(key, MaskURL(u))
	}
}

// maskValues replaces every value of the string map under key.
func maskValues(o *Object, key string) {
	m, ok := mustObj(o, key)
	if !ok {
		return
	}
	for _, k := range m.Keys() {
		m.Set(k, Mask)
	}
}

// maskExtras masks the unknown fields of o: a sensitive one whole, the others
// searched for sensitive keys at any depth.
func maskExtras(o *Object, known map[string]bool) {
	for _, k := range o.Keys() {
		if known[k] {
			continue
		}
		v, _ := o.Get(k)
		if IsSensitiveKey(k) {
			o.Set(k, Mask)
			continue
		}
		o.Set(k, maskDeep(v))
	}
}

func maskDeep(v any) any {
	switch t := v.(type) {
	case *Object:
		for _, k := range t.Keys() {
			e, _ := t.Get(k)
			if IsSensitiveKey(k) {
				t.Set(k, Mask)
			} else {
				t.Set(k, maskDeep(e))
			}
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = maskDeep(e)
		}
		return t
	}
	return v
}

// Placeholders is a lookup that leaves every $VAR reference as written, for
// rendering the raw file (the config API never shows resolved values).
func Placeholders(name string) (string, bool) { return "$" + name, true }

// driverAt is one plugin task driver entry of a raw server and how to
// replace it.
type driverAt struct {
	value any
	name  string // the task toolset's name, "" for the server's own driver
	set   func(any)
}

// drivers are the plugin task driver entries of a raw server: its own
// "driver" and each task toolset's.
func drivers(o *Object) []driverAt {
	var out []driverAt
	if v, ok := o.Get("driver"); ok {
		out = append(out, driverAt{value: v, set: func(x any) { o.Set("driver", x) }})
	}
	toolsets, _ := rawAt(o, "task_toolsets").([]any)
	for _, t := range toolsets {
		ts, ok := t.(*Object)
		if !ok {
			continue
		}
		if v, ok := ts.Get("driver"); ok {
			name, _ := rawAt(ts, "name").(string)
			out = append(out, driverAt{value: v, name: name, set: func(x any) { ts.Set("driver", x) }})
		}
	}
	return out
}
