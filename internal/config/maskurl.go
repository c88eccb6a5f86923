package config

import (
	"net/url"
	"strconv"
	"strings"
)

// urlSecretParams are query parameter names that carry a credential in URLs
// although IsSensitiveKey does not flag them as field names (signed URLs'
// "sig", "key=..." API keys).
var urlSecretParams = keySet("key", "sig", "signature", "auth", "jwt", "session", "sessionid", "code")

// urlSecret is one secret-bearing span of a URL: [start, end) of its text.
// name identifies it across two spellings of the URL: "@password",
// "@userinfo" (user info without a password, often a bare token), or the
// decoded query parameter name with its occurrence ("token#0").
type urlSecret struct {
	name       string
	start, end int
}

// urlSecrets finds the secret spans of u and the URL's origin (scheme and
// host, without user info). Only absolute URLs with "://" have user info;
// any URL's query is searched.
func urlSecrets(u string) (spans []urlSecret, origin string) {
	rest, offset := u, 0
	if i := strings.Index(u, "://"); i > 0 {
		hostStart := i + 3
		hostEnd := len(u)
		if j := strings.IndexAny(u[hostStart:], "/?#"); j >= 0 {
			hostEnd = hostStart + j
		}
		authority := u[hostStart:hostEnd]
		origin = u[:hostStart] + authority
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			origin = u[:hostStart] + authority[at+1:]
			info := authority[:at]
			if c := strings.IndexByte(info, ':'); c >= 0 {
				if c+1 < len(info) {
					spans = append(spans, urlSecret{"@password", hostStart + c + 1, hostStart + at})
				}
			} else if info != "" {
				spans = append(spans, urlSecret{"@userinfo", hostStart, hostStart + at})
			}
		}
		rest, offset = u[hostEnd:], hostEnd
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		return spans, origin
	}
	query := rest[q+1:]
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query = query[:h]
	}
	pos := offset + q + 1
	seen := map[string]int{}
	for _, part := range strings.Split(query, "&") {
		k, v, hasValue := strings.Cut(part, "=")
		if name, err := url.QueryUnescape(k); err == nil {
			k = name
		}
		if hasValue && v != "" && (IsSensitiveKey(k) || urlSecretParams[strings.ToLower(k)]) {
			n := seen[k]
			seen[k]++
			start := pos + len(part) - len(v)
			spans = append(spans, urlSecret{k + "#" + strconv.Itoa(n), start, start + len(v)})
		}
		pos += len(part) + 1
	}
	return spans, origin
}

// MaskURL returns u with its password (or its whole user info when there
// is no password) and the values of secret-looking query parameters
// replaced by Mask; everything else is kept byte for byte.
func MaskURL(u string) string {
	spans, _ := urlSecrets(u)
	return replaceSpans(u, spans, func(urlSecret) string { return Mask })
}

func replaceSpans(u string, spans []urlSecret, with func(urlSecret) string) string {
	if len(spans) == 0 {
		return u
	}
	var b strings.Builder
	last := 0
	for _, s := range spans {
		b.WriteString(u[last:s.start])
		b.WriteString(with(s))
		last = s.end
	}
	b.WriteString(u[last:])
	return b.String()
}

// maskedURL reports whether u holds the placeholder in a secret position.
func maskedURL(u string) bool {
	spans, _ := urlSecrets(u)
	for _, s := range spans {
		if u[s.start:s.end] == Mask {
			return true
		}
	}
	return false
}

// restoreURL puts the stored URL's secrets back where the incoming URL (a
// client's copy of the masked form) holds the placeholder: unchanged, the
// stored URL is kept; edited, each masked part takes the stored part of the
// same name. The origin must not change, so a masked credential is never
// sent to a new host. field names the key in errors.
func restoreURL(in, stored any, field string) (any, error) {
	s, ok := in.(string)
	if !ok || !maskedURL(s) {
		return clone(in), nil
	}
	st, _ := stored.(string)
	if st == "" {
		return nil, mergeErr(field, msgURLPart)
	}
	if MaskURL(st) == s {
		return st, nil
	}
	inSpans, inOrigin := urlSecrets(s)
	stSpans, stOrigin := urlSecrets(st)
	if inOrigin != stOrigin {
		return nil, mergeErr(field, msgURLOrigin)
	}
	old := map[string]string{}
	for _, sp := range stSpans {
		old[sp.name] = st[sp.start:sp.end]
	}
	var missing bool
	out := replaceSpans(s, inSpans, func(sp urlSecret) string {
		v := s[sp.start:sp.end]
		if v != Mask {
			return v
		}
		o, ok := old[sp.name]
		missing = missing || !ok
		return o
	})
	if missing {
		return nil, mergeErr(field, msgURLPart)
	}
	return out, nil
}
