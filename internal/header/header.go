// Package header decides whether a value can be sent as an HTTP header and
// writes header overrides case-insensitively. Every credential layer goes
// through it, so no request carries one header under two spellings and no
// value that could split a request or smuggle a second header is ever sent.
// It also reads the one request header both doors check, Content-Type.
package header

import (
	"mime"
	"strings"
)

// JSON is the media type both doors accept.
const JSON = "application/json"

// IsJSON reports whether a Content-Type value names application/json, with
// or without parameters; its usual spelling is recognised without parsing.
func IsJSON(contentType string) bool {
	if contentType == JSON {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == JSON
}

// Reasons returned by IllegalValueReason. They describe the value and never
// contain it, so they are safe in errors, logs and model-visible messages.
const (
	ReasonNonASCII   = "contains characters outside ASCII"
	ReasonControl    = "contains a line break or another forbidden control character"
	ReasonWhitespace = "has leading or trailing whitespace"
)

// IllegalValueReason returns why v cannot be sent as an HTTP header value, or
// "" when it can. Checks, in order: any code point above 0x7F; NUL, LF, VT, FF
// or CR anywhere; a leading or trailing space or horizontal tab. Other control
// characters (an inner tab, 0x01, DEL) are allowed, as in DeerFlow.
func IllegalValueReason(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] > 0x7f {
			return ReasonNonASCII
		}
	}
	if strings.ContainsAny(v, "\x00\n\x0b\x0c\r") {
		return ReasonControl
	}
	if strings.Trim(v, " \t") != v {
		return ReasonWhitespace
	}
	return ""
}

// Reasons returned by IllegalNameReason; like the value reasons they never
// contain the name.
const (
	ReasonNameEmpty = "is empty"
	ReasonNameToken = "contains a line break, a space, a separator or another character not allowed in an HTTP header name"
)

// IllegalNameReason returns why name cannot be sent as an HTTP header name,
// or "" when it can: a name is a non-empty RFC 9110 token (letters, digits
// and !#$%&'*+-.^_`|~), so a CR or LF can never split a request.
func IllegalNameReason(name string) string {
	if name == "" {
		return ReasonNameEmpty
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return ReasonNameToken
		}
	}
	return ""
}

// Spellings maps each lower-cased name to the spelling given, for the names
// a connection already uses (a server's static headers). The first spelling
// of a name wins.
func Spellings(names []string) map[string]string {
	out := make(map[string]string, len(names))
	for _, n := range names {
		low := strings.ToLower(n)
		if _, ok := out[low]; !ok {
			out[low] = n
		}
	}
	return out
}

// Override is one header write.
type Override struct {
	Name  string
	Value string
}

// Apply returns base with overrides written in order. A name lands on the
// spelling the connection already uses (from spellings, then from base) and
// every other spelling of it is removed, so the result never carries one
// header twice and the override value always wins. Inputs are not modified.
func Apply(base map[string]string, overrides []Override, spellings map[string]string) map[string]string {
	merged := make(map[string]string, len(base)+len(overrides))
	for k, v := range base {
		merged[k] = v
	}
	lookup := make(map[string]string, len(spellings)+len(merged))
	for k, v := range spellings {
		lookup[k] = v
	}
	for k := range merged {
		low := strings.ToLower(k)
		if _, ok := lookup[low]; !ok {
			lookup[low] = k
		}
	}
	for _, o := range overrides {
		low := strings.ToLower(o.Name)
		canonical, ok := lookup[low]
		if !ok {
			canonical = o.Name
			lookup[low] = canonical
		}
		for k := range merged {
			if k != canonical && strings.ToLower(k) == low {
				delete(merged, k)
			}
		}
		merged[canonical] = o.Value
	}
	return merged
}
