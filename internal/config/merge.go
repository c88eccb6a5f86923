package config

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The config API round-trips servers in their masked form (see
// MaskedServers): a client reads them, edits one field and sends everything
// back, "***" placeholders included. MergeServer is DeerFlow's
// _merge_preserving_secrets: it puts the stored secrets back where the
// client sent a placeholder, refuses a placeholder that has nothing to
// restore, and never lets a "***" reach the file. It works on the raw,
// unsubstituted JSON of one mcpServers entry, so $VAR references are kept
// exactly as written.

// MergeMode selects how fields a request leaves out are treated.
type MergeMode int

const (
	// MergeBulk is PUT /api/mcp/config: routing, tools (and each tool's
	// routing and extra keys), user_auth, headers_from_context, unknown keys
	// and OAuth extras left out of the request keep their stored values; a
	// partial user_auth or headers_from_context block replaces only the
	// fields it sets.
	MergeBulk MergeMode = iota
	// MergeReplace is PUT /api/mcp/config/server: the request is the whole
	// server, so anything it leaves out is reset or removed; only explicit
	// "***" placeholders are restored from the stored server.
	MergeReplace
)

// MergeError is a request the merge refuses (DeerFlow answers it with HTTP
// 400). The message is DeerFlow's and names keys only, never a value.
type MergeError struct {
	// Key is the key the message names (for a placeholder left in a brand-new
	// server, the key inside Location).
	Key string
	// Location is set for "Cannot persist masked secret placeholder" errors:
	// where the placeholder sits, as DeerFlow words it ("env key 'K'").
	Location string
	msg      string
}

func (e *MergeError) Error() string { return e.msg }

func mergeErr(key, format string) *MergeError {
	return &MergeError{Key: key, msg: fmt.Sprintf(format, key)}
}

func persistErr(key, location string) *MergeError {
	return &MergeError{Key: key, Location: location,
		msg: fmt.Sprintf("Cannot persist masked secret placeholder for %s; provide a real value.", location)}
}

const (
	msgEnvKey      = "Cannot set env key '%s' to masked value '***'; provide a real value."
	msgHeader      = "Cannot set header '%s' to masked value '***'; provide a real value."
	msgTokenParam  = "Cannot set oauth extra_token_params key '%s' to masked value '***'; provide a real value."
	msgUserCred    = "Cannot set user_auth credential for '%s' to masked value '***'; provide a real value."
	msgExtraKey    = "Cannot set extra config key '%s' to masked value '***'; provide a real value."
	msgMaskedArray = "Cannot edit extra config array '%s' while masked secrets remain; provide real values for every masked secret."
	msgURLPart     = "Cannot set %s to a URL with masked value '***' where the stored URL has no secret to restore; provide a real value."
	msgURLOrigin   = "Cannot keep the masked '***' secrets of %s when its scheme or host changes; provide real values."
	msgDestination = "Cannot keep masked '***' secrets when the server's '%s' changes; provide real values for them."
)

// apiServerFields are the fields of DeerFlow's API server model; every other
// key of a server (cwd, transport, protocol_version, anything unknown) is an
// "extra" there: kept when a bulk PUT leaves it out, merged recursively, and
// masked by name.
var apiServerFields = keySet("enabled", "type", "command", "args", "env", "url", "headers",
	"oauth", "user_auth", "headers_from_context", "description", "routing", "tools",
	"tool_name_prefix", "tool_call_timeout", "session_init_timeout", "task_toolsets")

// toolOverrideFields are the declared fields of a tools.<name> override.
var toolOverrideFields = keySet("routing")

// MergeServer merges the raw server a request sent (incoming) with the raw
// server stored under the same name, as DeerFlow's PUT does:
//
//   - env, headers, oauth.extra_token_params, user_auth.users: a "***"
//     value takes the stored value of the same key; for a key that is not
//     stored it is an error naming the key. Keys the request leaves out are
//     dropped (except a bulk PUT that omits extra_token_params or users).
//   - oauth.client_secret and refresh_token (when both sides have oauth):
//     null or absent keeps the stored value, "" clears it (null), anything
//     else replaces it.
//   - user_auth, headers_from_context: an omitted block is kept (bulk); a
//     partial block replaces only the fields it sets (bulk), or the whole
//     block (replace). Their unknown keys merge like server extras.
//   - routing and tools omitted by a bulk PUT are kept; each sent tool
//     override keeps its stored routing and extras when it leaves them out
//     (bulk) and has its masked extras restored.
//   - unknown keys ("extras") merge recursively: a "***" under a sensitive
//     key name restores the stored value (error when there is none), objects
//     merge per key, and a list holding masked secrets must equal the masked
//     form of the stored list (then the stored list is kept). A bulk PUT
//     keeps stored extras it does not mention.
//
// Finally no "***" may remain anywhere a secret lives (CheckNoMaskedSecrets).
// Neither argument is modified; stored may be nil (a new server). Errors
// are *MergeError.
func MergeServer(incoming, stored *Object, mode MergeMode) (*Object, error) {
	if incoming == nil {
		incoming = NewObject()
	}
	preserve := mode == MergeBulk
	out := clone(incoming).(*Object)
	get := func(o *Object, k string) (any, bool) { return o.Get(k) }

	// DeerFlow's order decides which problem is reported first.
	if v, ok := get(incoming, "url"); ok {
		m, err := restoreURL(v, rawAt(stored, "url"), "url")
		if err != nil {
			return nil, err
		}
		out.Set("url", m)
	}
	if v, ok := get(incoming, "env"); ok {
		m, err := restoreMasked(v, rawAt(stored, "env"), msgEnvKey)
		if err != nil {
			return nil, err
		}
		out.Set("env", m)
	}
	if v, ok := get(incoming, "headers"); ok {
		m, err := restoreMasked(v, rawAt(stored, "headers"), msgHeader)
		if err != nil {
			return nil, err
		}
		out.Set("headers", m)
	}
	if v, ok := get(incoming, "oauth"); ok {
		m, err := mergeOAuth(v, rawAt(stored, "oauth"), preserve)
		if err != nil {
			return nil, err
		}
		out.Set("oauth", m)
	}
	if v, ok := get(incoming, "user_auth"); ok {
		m, err := mergeBlock(v, rawAt(stored, "user_auth"), userAuthFields, preserve, func(in, base *Object, dst *Object) error {
			uv, ok := in.Get("users")
			if !ok {
				return nil
			}
			users, err := restoreMasked(uv, rawAt(base, "users"), msgUserCred)
			if err != nil {
				return err
			}
			dst.Set("users", users)
			return nil
		})
		if err != nil {
			return nil, err
		}
		out.Set("user_auth", m)
	}
	if v, ok := get(incoming, "headers_from_context"); ok {
		m, err := mergeBlock(v, rawAt(stored, "headers_from_context"), contextHeadersFields, preserve, nil)
		if err != nil {
			return nil, err
		}
		out.Set("headers_from_context", m)
	}
	if v, ok := get(incoming, "tools"); ok {
		m, err := mergeTools(v, rawAt(stored, "tools"), preserve)
		if err != nil {
			return nil, err
		}
		out.Set("tools", m)
	}
	if preserve {
		for _, k := range []string{"user_auth", "headers_from_context", "routing", "tools"} {
			if _, sent := incoming.Get(k); sent {
				continue
			}
			if sv, ok := stored.Get(k); ok {
				out.Set(k, clone(sv))
			}
		}
	}
	if err := mergeExtrasInto(out, incoming, stored, apiServerFields, preserve); err != nil {
		return nil, err
	}
	restoreDrivers(out, stored)
	if field := changedDestination(out, stored); stored != nil && field != "" && anyMasked(incoming) {
		// A restored secret would go wherever the caller now points the
		// server.
		return nil, mergeErr(field, msgDestination)
	}
	if err := CheckNoMaskedSecrets(out); err != nil {
		return nil, err
	}
	return out, nil
}

// restoreDrivers puts back each plugin task driver entry of out that is
// the masked form of the stored one in its place (the server's own, or the
// task toolset's of the same name): a driver is shown masked and never
// changed through the config API, so what comes back masked is what is
// stored. Anything else is left for the write's checks to judge.
func restoreDrivers(out, stored *Object) {
	if stored == nil {
		return
	}
	was := map[string]any{}
	for _, d := range drivers(stored) {
		was[d.name] = d.value
	}
	for _, d := range drivers(out) {
		sv, ok := was[d.name]
		if !ok || !anyMasked(d.value) {
			continue
		}
		masked, _ := json.Marshal(maskDeep(clone(sv)))
		sent, _ := json.Marshal(d.value)
		if string(masked) == string(sent) {
			d.set(clone(sv))
		}
	}
}

// destinationFields decide where a server's secrets are sent: its
// transport, its URL's scheme and host, and for stdio the program and its
// arguments.
var destinationFields = []string{"url", "command", "args"}

// transportOf is a raw entry's transport as the loader reads it: "type",
// else DeerFlow's "transport" alias, else stdio.
func transportOf(o *Object) string {
	for _, k := range []string{"type", "transport"} {
		if v, ok := o.Get(k); ok {
			if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
				return strings.ToLower(strings.TrimSpace(s))
			}
		}
	}
	return "stdio"
}

// SameDestination reports whether next sends what it holds where stored
// does: the same transport, URL, command and arguments, as stored spells
// them. A secret restored from "***" and a kept "$VAR" reference are bound
// to that destination, so an API edit cannot redirect them to a server of
// the caller's choosing.
func SameDestination(next, stored *Object) bool { return changedDestination(next, stored) == "" }

// changedDestination returns the first destination field next spells
// otherwise than stored, or "".
func changedDestination(next, stored *Object) string {
	if a, b := transportOf(next), transportOf(stored); a != b {
		return "type"
	}
	for _, k := range destinationFields {
		a, _ := next.Get(k)
		b, _ := stored.Get(k)
		if k == "url" {
			a, b = urlOrigin(a), urlOrigin(b)
		}
		if destinationValue(a) != destinationValue(b) {
			return k
		}
	}
	return ""
}

// urlOrigin is a URL's scheme and host (the rule the URL's own masked parts
// follow): a new path on the same server keeps its secrets. Anything that is
// not an absolute URL string compares as it is.
func urlOrigin(v any) any {
	if s, ok := v.(string); ok {
		if _, origin := urlSecrets(s); origin != "" {
			return strings.ToLower(origin)
		}
	}
	return v
}

// destinationValue is a destination field as JSON, with absent, null, ""
// and [] alike (a masked view spells an HTTP server's command and args so).
func destinationValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	switch string(b) {
	case "null", `""`, "[]":
		return ""
	}
	return string(b)
}

// anyMasked reports a "***" value anywhere in v.
func anyMasked(v any) bool {
	switch t := v.(type) {
	case *Object:
		for _, k := range t.Keys() {
			if anyMasked(rawAt(t, k)) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if anyMasked(e) {
				return true
			}
		}
	case string:
		return t == Mask
	}
	return false
}

// restoreMasked merges a string map (env, headers, extra_token_params,
// users): "***" takes the stored value of that key, a key without one is an
// error. A value that is not an object is passed on for validation to judge.
func restoreMasked(in, stored any, format string) (any, error) {
	m, ok := in.(*Object)
	if !ok {
		return clone(in), nil
	}
	st, _ := stored.(*Object)
	out := NewObject()
	for _, k := range m.Keys() {
		v, _ := m.Get(k)
		if isMasked(v) {
			sv, present := st.Get(k)
			if !present {
				return nil, mergeErr(k, format)
			}
			out.Set(k, clone(sv))
			continue
		}
		out.Set(k, clone(v))
	}
	return out, nil
}

func mergeOAuth(in, stored any, preserve bool) (any, error) {
	io, ok := in.(*Object)
	if !ok {
		return clone(in), nil
	}
	base, _ := stored.(*Object)
	out := clone(io).(*Object)

	if v, sent := io.Get("token_url"); sent {
		m, err := restoreURL(v, rawAt(base, "token_url"), "token_url")
		if err != nil {
			return nil, err
		}
		out.Set("token_url", m)
	}
	if v, sent := io.Get("extra_token_params"); sent {
		m, err := restoreMasked(v, rawAt(base, "extra_token_params"), msgTokenParam)
		if err != nil {
			return nil, err
		}
		out.Set("extra_token_params", m)
	} else if preserve {
		if bv, ok := base.Get("extra_token_params"); ok {
			out.Set("extra_token_params", clone(bv))
		}
	}
	if err := mergeExtrasInto(out, io, base, oauthFields, preserve); err != nil {
		return nil, err
	}
	if base != nil {
		// null (what GET shows) or absent keeps the stored secret, "" clears
		// it, anything else replaces it.
		for _, k := range []string{"client_secret", "refresh_token"} {
			iv, sent := io.Get(k)
			switch {
			case !sent || iv == nil:
				if bv, ok := base.Get(k); ok {
					out.Set(k, clone(bv))
				}
			case iv == "":
				out.Set(k, nil)
			}
		}
	}
	return out, nil
}

// mergeBlock merges user_auth or headers_from_context. In bulk mode the
// stored block is the starting point and only the declared fields the
// request sets replace it; in replace mode the request's block is. Unknown
// keys merge as extras either way; special handles declared fields that
// need restoring (user_auth.users).
func mergeBlock(in, stored any, declared map[string]bool, preserve bool, special func(in, base, dst *Object) error) (any, error) {
	io, ok := in.(*Object)
	if !ok {
		return clone(in), nil
	}
	base, _ := stored.(*Object)
	var out *Object
	if preserve {
		out = NewObject()
		if base != nil {
			out = clone(base).(*Object)
		}
		for _, k := range io.Keys() {
			if declared[k] {
				v, _ := io.Get(k)
				out.Set(k, clone(v))
			}
		}
	} else {
		out = clone(io).(*Object)
	}
	// Extras are merged against the stored block; in bulk mode the stored
	// extras are already in out and stay unless the request sends the key.
	for _, k := range io.Keys() {
		if declared[k] {
			continue
		}
		v, _ := io.Get(k)
		bv, present := base.Get(k)
		m, err := mergeExtra(k, v, bv, present)
		if err != nil {
			return nil, err
		}
		out.Set(k, m)
	}
	if special != nil {
		if err := special(io, base, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func mergeTools(in, stored any, preserve bool) (any, error) {
	io, ok := in.(*Object)
	if !ok {
		return clone(in), nil
	}
	base, _ := stored.(*Object)
	out := NewObject()
	for _, name := range io.Keys() {
		tv, _ := io.Get(name)
		to, ok := tv.(*Object)
		if !ok {
			out.Set(name, clone(tv))
			continue
		}
		bt, _ := rawAt(base, name).(*Object)
		m := clone(to).(*Object)
		if err := mergeExtrasInto(m, to, bt, toolOverrideFields, preserve); err != nil {
			return nil, err
		}
		if preserve && bt != nil {
			if _, sent := to.Get("routing"); !sent {
				if br, ok := bt.Get("routing"); ok {
					m.Set("routing", clone(br))
				}
			}
		}
		out.Set(name, m)
	}
	return out, nil
}

// mergeExtrasInto sets into dst the merged value of every unknown key of in
// (keys outside declared), and, when preserve is set, the stored unknown keys
// in does not mention.
func mergeExtrasInto(dst, in, base *Object, declared map[string]bool, preserve bool) error {
	for _, k := range in.Keys() {
		if declared[k] {
			continue
		}
		v, _ := in.Get(k)
		bv, present := base.Get(k)
		m, err := mergeExtra(k, v, bv, present)
		if err != nil {
			return err
		}
		dst.Set(k, m)
	}
	if preserve {
		for _, k := range base.Keys() {
			if declared[k] {
				continue
			}
			if _, sent := in.Get(k); !sent {
				bv, _ := base.Get(k)
				dst.Set(k, clone(bv))
			}
		}
	}
	return nil
}

// mergeExtra is DeerFlow's _merge_extra_value_preserving_masked.
func mergeExtra(key string, in, stored any, present bool) (any, error) {
	if isMasked(in) && IsSensitiveKey(key) {
		if !present {
			return nil, mergeErr(key, msgExtraKey)
		}
		return clone(stored), nil
	}
	switch t := in.(type) {
	case *Object:
		so, ok := stored.(*Object)
		if !ok {
			break
		}
		out := NewObject()
		for _, k := range t.Keys() {
			v, _ := t.Get(k)
			sv, p := so.Get(k)
			m, err := mergeExtra(k, v, sv, p)
			if err != nil {
				return nil, err
			}
			out.Set(k, m)
		}
		return out, nil
	case []any:
		sl, ok := stored.([]any)
		if !ok {
			break
		}
		// Entries of a list cannot be matched up while their secrets are
		// masked, so a list with masked secrets must be the stored list,
		// unedited.
		if containsMasked(key, t) {
			if !jsonEqual(t, maskDeep(clone(sl))) {
				return nil, mergeErr(key, msgMaskedArray)
			}
			return clone(sl), nil
		}
	}
	return clone(in), nil
}

// CheckNoMaskedSecrets refuses a server that still holds the "***"
// placeholder where a secret lives: the secret parts of url and
// oauth.token_url (see MaskURL), env and header values, OAuth
// client_secret, refresh_token and extra_token_params, user_auth users, and
// sensitive unknown keys of the server, its oauth, user_auth and
// headers_from_context blocks and its tool overrides (at any depth). It is
// DeerFlow's _ensure_no_masked_secrets, applied to new servers too.
func CheckNoMaskedSecrets(server *Object) error {
	if err := noMaskedValues(rawAt(server, "env"), "env key '%s'"); err != nil {
		return err
	}
	if err := noMaskedValues(rawAt(server, "headers"), "header '%s'"); err != nil {
		return err
	}
	if err := noMaskedExtras(server, apiServerFields, "extra config key '%s'"); err != nil {
		return err
	}
	if u, _ := rawAt(server, "url").(string); maskedURL(u) {
		return persistErr("url", "url")
	}
	if oa, ok := rawAt(server, "oauth").(*Object); ok {
		if u, _ := rawAt(oa, "token_url").(string); maskedURL(u) {
			return persistErr("token_url", "oauth token_url")
		}
		for _, k := range []string{"client_secret", "refresh_token"} {
			if isMasked(rawAt(oa, k)) {
				return persistErr(k, "oauth "+k)
			}
		}
		if err := noMaskedValues(rawAt(oa, "extra_token_params"), "oauth extra_token_params key '%s'"); err != nil {
			return err
		}
		if err := noMaskedExtras(oa, oauthFields, "oauth extra config key '%s'"); err != nil {
			return err
		}
	}
	if ua, ok := rawAt(server, "user_auth").(*Object); ok {
		if err := noMaskedValues(rawAt(ua, "users"), "user_auth credential '%s'"); err != nil {
			return err
		}
		if err := noMaskedExtras(ua, userAuthFields, "user_auth extra config key '%s'"); err != nil {
			return err
		}
	}
	if ch, ok := rawAt(server, "headers_from_context").(*Object); ok {
		if err := noMaskedExtras(ch, contextHeadersFields, "headers_from_context extra config key '%s'"); err != nil {
			return err
		}
	}
	if tools, ok := rawAt(server, "tools").(*Object); ok {
		for _, name := range tools.Keys() {
			if t, ok := rawAt(tools, name).(*Object); ok {
				// The tool name is quoted as written, like the keys.
				loc := "tools override '" + escapePercent(name) + "' extra config key '%s'"
				if err := noMaskedExtras(t, toolOverrideFields, loc); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func escapePercent(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			out = append(out, '%')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func noMaskedValues(v any, location string) error {
	m, ok := v.(*Object)
	if !ok {
		return nil
	}
	for _, k := range m.Keys() {
		if isMasked(rawAt(m, k)) {
			return persistErr(k, fmt.Sprintf(location, k))
		}
	}
	return nil
}

func noMaskedExtras(o *Object, declared map[string]bool, location string) error {
	for _, k := range o.Keys() {
		if declared[k] {
			continue
		}
		if containsMasked(k, rawAt(o, k)) {
			return persistErr(k, fmt.Sprintf(location, k))
		}
	}
	return nil
}

// containsMasked reports a "***" under a sensitive key name anywhere in v
// (list items count as being under the list's key).
func containsMasked(key string, v any) bool {
	if isMasked(v) && IsSensitiveKey(key) {
		return true
	}
	switch t := v.(type) {
	case *Object:
		for _, k := range t.Keys() {
			if containsMasked(k, rawAt(t, k)) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if containsMasked(key, e) {
				return true
			}
		}
	}
	return false
}

func isMasked(v any) bool {
	s, ok := v.(string)
	return ok && s == Mask
}

// jsonEqual compares two ordered JSON values as Python compares the decoded
// documents: objects regardless of key order, numbers by value.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.Keys() {
			yv, ok := y.Get(k)
			if !ok || !jsonEqual(rawAt(x, k), yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		xf, err1 := x.Float64()
		yf, err2 := y.Float64()
		return err1 == nil && err2 == nil && xf == yf
	default:
		return a == b
	}
}

// MaskRawServer masks one raw mcpServers entry the way GET masks it, without
// adding defaults: what a client that edits the raw form would send back.
func MaskRawServer(server *Object) *Object {
	if server == nil {
		return nil
	}
	return maskServer(clone(server).(*Object))
}
