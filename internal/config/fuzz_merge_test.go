package config_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/envvar"
)

// FuzzMerge checks the PUT merge (config.MergeServer) on arbitrary pairs of
// raw servers:
//
//   - it never panics and never modifies its inputs;
//   - a success never leaves "***" where a secret lives (checked by an
//     independent walk of the result);
//   - an error is a *MergeError whose message is one of DeerFlow's
//     templates filled with a key name of the request or the stored server,
//     so it cannot carry a stored (or sent) secret value;
//   - merging the masked form of a stored server (what GET shows) into that
//     server gives back the stored server byte for byte, unless the stored
//     server itself holds a placeholder where a secret lives;
//   - the config API's $VAR rule (config.CheckEnvRefs) never refuses that
//     round trip, and refuses a merged server only with an *EnvRefError
//     naming a "$NAME" the request sent at a field where stored differs, or
//     one the merge kept from a stored server whose destination moved.
func FuzzMerge(f *testing.F) {
	seeds := []struct{ incoming, stored string }{
		{`{"env": {"KEY": "***"}}`, `{"env": {"KEY": "real_secret"}}`},
		{`{"env": {"NEW": "***"}}`, `{"env": {}}`},
		{`{"headers": {"Authorization": "***"}}`, `{"headers": {"Authorization": "Bearer real"}}`},
		{`{"oauth": {"client_secret": null, "refresh_token": "", "token_url": "u", "extra_token_params": {"a": "***"}, "vendor_api_key": "***"}}`,
			`{"oauth": {"client_secret": "cs", "refresh_token": "rt", "token_url": "u", "extra_token_params": {"a": "pa"}, "vendor_api_key": "vk"}}`},
		{`{"oauth": {"enabled": false}}`, `{"oauth": {"token_url": "u", "extra_token_params": {"a": "pa"}, "note": "n"}}`},
		{`{"user_auth": {"users": {"alice": "***", "carol": "***"}}}`, `{"user_auth": {"users": {"alice": "a-token"}}}`},
		{`{"user_auth": {"enabled": false}}`, `{"user_auth": {"header": "X-U", "users": {"alice": "a-token"}, "apiToken": "ua"}}`},
		{`{"headers_from_context": {"headers": {}, "api_key": "***"}}`, `{"headers_from_context": {"headers": {"X": "k"}, "api_key": "hk"}}`},
		{`{"tools": {"q": {"api_key": "***", "routing": {"priority": 3}}}}`, `{"tools": {"q": {"routing": {"priority": 1}, "api_key": "tk"}}}`},
		{`{"providers": [{"name": "a", "apiKey": "***"}, {"name": "b", "apiKey": "new"}]}`, `{"providers": [{"name": "a", "apiKey": "pa"}]}`},
		{`{"providers": [{"name": "a", "apiKey": "***"}]}`, `{"providers": [{"name": "a", "apiKey": "pa"}]}`},
		{`{"nested": {"refreshToken": "***", "safe": "x"}, "api_key": "***", "credentials": "***"}`,
			`{"nested": {"refreshToken": "rt", "safe": "y"}, "api_key": "ak", "credentials": {"user": "u", "pass": "p"}}`},
		{`{"type": "http", "url": "https://x", "transport": "sse"}`, `{"transport": {"token": "tt"}, "routing": {"mode": "prefer"}}`},
		{`{"env": ["***"], "oauth": "***", "tools": [1], "user_auth": null}`, `{"env": {"A": 1}, "oauth": {"client_secret": "***"}}`},
		{`{"command": "npx", "env": {"GITHUB_TOKEN": "***"}}`, ``},
		{`{"url": "https://u:***@h/mcp?token=***&a=1", "oauth": {"token_url": "https://a/t?client_secret=***"}}`,
			`{"url": "https://u:pw@h/mcp?token=t&a=1", "oauth": {"token_url": "https://a/t?client_secret=cs"}}`},
		{`{"url": "https://***@h2/mcp"}`, `{"url": "https://tok@h/mcp"}`},
		{`{"url": "https://h/v2?key=***&key=***"}`, `{"url": "https://h/v1?key=k1"}`},
		{`{"url": "https://u:***@h/"}`, `{"url": "https://u:***@h/"}`},
		{`{"url": "$URL", "headers": {"Authorization": "***", "X-Leak": "$SECRET"}, "args": ["$DIR", "-y"]}`,
			`{"url": "$URL", "headers": {"Authorization": "$TOKEN"}, "args": ["-y", "$DIR"]}`},
		{`{"env": {"K": "***"}, "oauth": {"client_secret": null, "extra_token_params": {"aud": "***"}}, "vendor": {"list": [{"k": "$V"}]}}`,
			`{"env": {"K": "$K"}, "oauth": {"client_secret": "$CS", "extra_token_params": {"aud": "$AUD"}}, "vendor": {"list": [{"k": "$V"}]}}`},
		{`{"headers": {"X": "$"}, "tools": {"q": {"api_key": "$Q"}}}`, `{"tools": {"q": {"api_key": "$Q", "routing": {"priority": 1}}}}`},
	}
	for _, s := range seeds {
		f.Add(s.incoming, s.stored, false)
		f.Add(s.incoming, s.stored, true)
	}
	f.Fuzz(func(t *testing.T, incomingJSON, storedJSON string, replaceMode bool) {
		incoming, ok := fuzzObject(incomingJSON)
		if !ok {
			return
		}
		stored, storedOK := fuzzObject(storedJSON)
		mode := config.MergeBulk
		if replaceMode {
			mode = config.MergeReplace
		}
		before := fuzzText(incoming) + "\x00" + fuzzText(stored)

		var merged *config.Object
		var err error
		if storedOK {
			merged, err = config.MergeServer(incoming, stored, mode)
		} else {
			stored = nil
			merged, err = incoming, config.CheckNoMaskedSecrets(incoming)
		}
		if after := fuzzText(incoming) + "\x00" + fuzzText(stored); after != before {
			t.Fatalf("the merge modified its inputs")
		}
		if err != nil {
			checkMergeError(t, err, incoming, stored)
		} else {
			visitSecrets(merged, func(where string, v any) {
				if v == config.Mask {
					t.Fatalf("merged server keeps a placeholder at %s: %s", where, fuzzText(merged))
				}
			})
			if err := config.CheckEnvRefs("s", merged, stored, config.EnvAllowlist{}); err != nil {
				var re *config.EnvRefError
				// A bulk merge keeps stored extras the request does not
				// mention; when the destination changes, a kept reference
				// is refused too (it would follow the server elsewhere).
				if !errors.As(err, &re) {
					t.Fatalf("CheckEnvRefs failed with %T, want *EnvRefError: %v", err, err)
				}
				moved := stored != nil && !config.SameDestination(merged, stored) && sendsRef(stored, re.Name)
				if !sendsRef(incoming, re.Name) && !moved {
					t.Fatalf("CheckEnvRefs refused a reference neither the request sent nor a moved server kept: %v\nincoming %s", err, fuzzText(incoming))
				}
			}
		}

		if stored == nil {
			return
		}
		// GET → PUT unchanged gives back the stored server.
		masked := config.MaskRawServer(stored)
		again, err := config.MergeServer(masked, stored, mode)
		placeholderStored := false
		visitSecrets(stored, func(_ string, v any) { placeholderStored = placeholderStored || v == config.Mask })
		if err != nil {
			if !placeholderStored {
				t.Fatalf("merging the masked form of the stored server failed: %v\nstored %s\nmasked %s", err, fuzzText(stored), fuzzText(masked))
			}
			checkMergeError(t, err, masked, stored)
			return
		}
		if got, want := fuzzText(again), fuzzText(stored); got != want {
			t.Fatalf("masked round trip changed the server:\n got %s\nwant %s\nmasked %s", got, want, fuzzText(masked))
		}
		if err := config.CheckEnvRefs("s", again, stored, config.EnvAllowlist{}); err != nil {
			t.Fatalf("the $VAR rule refuses a masked round trip: %v\nstored %s", err, fuzzText(stored))
		}
	})
}

// sendsRef reports whether some string in v is an environment reference to
// name (a walk, not a text search: JSON escaping would hide "$&" or a key
// that is not valid UTF-8).
func sendsRef(v any, name string) bool {
	switch t := v.(type) {
	case *config.Object:
		for _, k := range t.Keys() {
			if e, _ := t.Get(k); sendsRef(e, name) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if sendsRef(e, name) {
				return true
			}
		}
	case string:
		_, ref, isRef := envvar.Resolve(t, func(string) (string, bool) { return "", false })
		return isRef && ref == name
	}
	return false
}

func fuzzObject(s string) (*config.Object, bool) {
	if len(s) > 1<<14 {
		return nil, false
	}
	v, err := config.ParseJSON([]byte(s))
	if err != nil {
		return nil, false
	}
	o, ok := v.(*config.Object)
	return o, ok
}

func fuzzText(o *config.Object) string {
	if o == nil {
		return "<nil>"
	}
	b, err := json.Marshal(o)
	if err != nil {
		return "<unmarshalable: " + err.Error() + ">"
	}
	return string(b)
}

var (
	keyTemplates = []*regexp.Regexp{
		regexp.MustCompile(`(?s)^Cannot set env key '(.*)' to masked value '\*\*\*'; provide a real value\.$`),
		regexp.MustCompile(`(?s)^Cannot set header '(.*)' to masked value '\*\*\*'; provide a real value\.$`),
		regexp.MustCompile(`(?s)^Cannot set oauth extra_token_params key '(.*)' to masked value '\*\*\*'; provide a real value\.$`),
		regexp.MustCompile(`(?s)^Cannot set user_auth credential for '(.*)' to masked value '\*\*\*'; provide a real value\.$`),
		regexp.MustCompile(`(?s)^Cannot set extra config key '(.*)' to masked value '\*\*\*'; provide a real value\.$`),
		regexp.MustCompile(`(?s)^Cannot edit extra config array '(.*)' while masked secrets remain; provide real values for every masked secret\.$`),
		regexp.MustCompile(`(?s)^Cannot set (url|token_url) to a URL with masked value '\*\*\*' where the stored URL has no secret to restore; provide a real value\.$`),
		regexp.MustCompile(`(?s)^Cannot keep the masked '\*\*\*' secrets of (url|token_url) when its scheme or host changes; provide real values\.$`),
		regexp.MustCompile(`^Cannot keep masked '\*\*\*' secrets when the server's '(type|url|command|args)' changes; provide real values for them\.$`),
	}
	persistTemplate = regexp.MustCompile(`(?s)^Cannot persist masked secret placeholder for (.*); provide a real value\.$`)
	locations       = regexp.MustCompile(`(?s)^(?:(?:env key|header|extra config key|oauth extra_token_params key|oauth extra config key|user_auth credential|user_auth extra config key|headers_from_context extra config key|tools override '.*' extra config key) '(.*)'|oauth (client_secret|refresh_token|token_url)|(url))$`)
)

// checkMergeError: the error is DeerFlow's message around a key the request
// sent, so it repeats no secret value of either side.
func checkMergeError(t *testing.T, err error, incoming, stored *config.Object) {
	t.Helper()
	var me *config.MergeError
	if !errors.As(err, &me) {
		t.Fatalf("error %T %v is not a *MergeError", err, err)
	}
	msg := err.Error()
	named, found := "", false
	for _, re := range keyTemplates {
		if m := re.FindStringSubmatch(msg); m != nil {
			named, found = m[1], true
			break
		}
	}
	if !found {
		m := persistTemplate.FindStringSubmatch(msg)
		if m == nil || m[1] != me.Location {
			t.Fatalf("unexpected message %q (location %q)", msg, me.Location)
		}
		l := locations.FindStringSubmatch(m[1])
		if l == nil {
			t.Fatalf("unexpected location in %q", msg)
		}
		named = l[1] + l[2] + l[3]
	}
	if named != me.Key {
		t.Fatalf("message %q names %q, error Key is %q", msg, named, me.Key)
	}
	keys := map[string]bool{}
	collectKeys(incoming, keys)
	collectKeys(stored, keys) // a bulk PUT keeps stored keys it does not mention
	if !keys[me.Key] {
		t.Fatalf("message %q names %q, which is no key of either side", msg, me.Key)
	}
	// The message is a fixed template around a key of the request, so it
	// cannot carry a value: no substring search is needed (and one would
	// only find values that happen to spell a template word).
}

func collectKeys(v any, into map[string]bool) {
	switch t := v.(type) {
	case *config.Object:
		if t == nil {
			return
		}
		for _, k := range t.Keys() {
			into[k] = true
			e, _ := t.Get(k)
			collectKeys(e, into)
		}
	case []any:
		for _, e := range t {
			collectKeys(e, into)
		}
	}
}

// visitSecrets calls f with every value of a raw server that holds a secret,
// as DeerFlow's API model sees it. It is written independently of the merge
// code on purpose.
func visitSecrets(server *config.Object, f func(where string, v any)) {
	if server == nil {
		return
	}
	get := func(o *config.Object, k string) any { v, _ := o.Get(k); return v }
	asObj := func(v any) *config.Object { o, _ := v.(*config.Object); return o }
	values := func(where string, v any) {
		if o := asObj(v); o != nil {
			for _, k := range o.Keys() {
				f(where+"."+k, get(o, k))
			}
		}
	}
	extras := func(where string, o *config.Object, declared ...string) {
		if o == nil {
			return
		}
	next:
		for _, k := range o.Keys() {
			for _, d := range declared {
				if k == d {
					continue next
				}
			}
			sensitiveLeaves(where+"."+k, k, get(o, k), f)
		}
	}
	urlParts := func(where string, v any) {
		if u, ok := v.(string); ok {
			for _, part := range urlSecretParts(u) {
				f(where, part)
			}
		}
	}
	urlParts("url", get(server, "url"))
	values("env", get(server, "env"))
	values("headers", get(server, "headers"))
	extras("", server, "enabled", "type", "command", "args", "env", "url", "headers", "oauth", "user_auth",
		"headers_from_context", "description", "routing", "tools", "tool_name_prefix", "tool_call_timeout",
		"session_init_timeout", "task_toolsets")
	if oa := asObj(get(server, "oauth")); oa != nil {
		for _, k := range []string{"client_secret", "refresh_token"} {
			if v, ok := oa.Get(k); ok {
				f("oauth."+k, v)
			}
		}
		urlParts("oauth.token_url", get(oa, "token_url"))
		values("oauth.extra_token_params", get(oa, "extra_token_params"))
		extras("oauth", oa, "enabled", "token_url", "grant_type", "client_id", "client_secret", "refresh_token",
			"scope", "audience", "token_field", "token_type_field", "expires_in_field", "default_token_type",
			"refresh_skew_seconds", "extra_token_params")
	}
	if ua := asObj(get(server, "user_auth")); ua != nil {
		values("user_auth.users", get(ua, "users"))
		extras("user_auth", ua, "enabled", "header", "users", "on_missing")
	}
	extras("headers_from_context", asObj(get(server, "headers_from_context")), "enabled", "headers", "on_missing")
	if tools := asObj(get(server, "tools")); tools != nil {
		for _, name := range tools.Keys() {
			extras("tools."+name, asObj(get(tools, name)), "routing")
		}
	}
}

// sensitiveLeaves reports the scalar values that sit directly under a
// secret-named key (list items count as under their list's key).
func sensitiveLeaves(where, key string, v any, f func(string, any)) {
	switch t := v.(type) {
	case *config.Object:
		for _, k := range t.Keys() {
			e, _ := t.Get(k)
			sensitiveLeaves(where+"."+k, k, e, f)
		}
	case []any:
		for _, e := range t {
			sensitiveLeaves(where+"[]", key, e, f)
		}
	default:
		if config.IsSensitiveKey(key) {
			f(where, t)
		}
	}
}

// urlSecretParts returns the raw secret parts of a URL as the config API
// masks them: the password (or the whole user info without one) of an
// absolute URL's authority and the values of secret-named query parameters.
func urlSecretParts(u string) []string {
	var out []string
	rest := u
	if _, after, ok := strings.Cut(u, "://"); ok && !strings.HasPrefix(u, "://") {
		authority, tail := after, ""
		if i := strings.IndexAny(after, "/?#"); i >= 0 {
			authority, tail = after[:i], after[i:]
		}
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			user, pass, hasPass := strings.Cut(authority[:at], ":")
			switch {
			case hasPass && pass != "":
				out = append(out, pass)
			case !hasPass && user != "":
				out = append(out, user)
			}
		}
		rest = tail
	}
	_, query, ok := strings.Cut(rest, "?")
	if !ok {
		return out
	}
	query, _, _ = strings.Cut(query, "#")
	for _, kv := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		switch strings.ToLower(k) {
		case "key", "sig", "signature", "auth", "jwt", "session", "sessionid", "code":
		default:
			if !config.IsSensitiveKey(k) {
				continue
			}
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
