package config

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/header"
)

// decoder walks an ordered JSON tree, substituting $VAR strings and
// collecting every problem with its field path.
type decoder struct {
	lookup   envvar.Lookup
	problems Problems
	warnings []string
}

func (d *decoder) fail(path, format string, args ...any) {
	d.problems = append(d.problems, &FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (d *decoder) warn(path, format string, args ...any) {
	d.warnings = append(d.warnings, (&FieldError{Path: path, Message: fmt.Sprintf(format, args...)}).Error())
}

// substitute applies $VAR substitution to every string value in v (keys are
// left alone) and returns a resolved copy.
func (d *decoder) substitute(v any) any {
	switch t := v.(type) {
	case *Object:
		c := NewObject()
		for _, k := range t.keys {
			c.Set(k, d.substitute(t.vals[k]))
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = d.substitute(e)
		}
		return c
	case string:
		v, _, _ := envvar.Resolve(t, d.lookup)
		return v
	default:
		return t
	}
}

// JSONType names the JSON type of a decoded value ("an object", "a list",
// "a string", …) for messages that must not show the value itself.
func JSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case *Object:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

func (d *decoder) object(path string, v any) (*Object, bool) {
	o, ok := v.(*Object)
	if !ok {
		d.fail(path, "must be an object, got %s", JSONType(v))
	}
	return o, ok
}

func (d *decoder) str(path string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.fail(path, "must be a string, got %s", JSONType(v))
	}
	return s, ok
}

// optStr accepts a string or null.
func (d *decoder) optStr(path string, v any) string {
	if v == nil {
		return ""
	}
	s, _ := d.str(path, v)
	return s
}

func (d *decoder) boolean(path string, v any, def bool) bool {
	if v == nil {
		d.fail(path, "must be true or false, got null")
		return def
	}
	b, ok := v.(bool)
	if !ok {
		d.fail(path, "must be true or false, got %s", JSONType(v))
		return def
	}
	return b
}

func (d *decoder) strList(path string, v any) []string {
	list, ok := v.([]any)
	if !ok {
		d.fail(path, "must be a list of strings, got %s", JSONType(v))
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		if s, ok := d.str(indexPath(path, i), e); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) strMap(path string, v any) Pairs {
	if v == nil {
		return nil
	}
	o, ok := d.object(path, v)
	if !ok {
		return nil
	}
	out := make(Pairs, 0, o.Len())
	for _, k := range o.Keys() {
		val, _ := o.Get(k)
		if s, ok := d.str(joinPath(path, k), val); ok {
			out = append(out, Pair{Key: k, Value: s})
		}
	}
	return out
}

func (d *decoder) number(path string, v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		d.fail(path, "must be a number, got %s", JSONType(v))
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.fail(path, "must be a finite number")
		return 0, false
	}
	return f, true
}

func (d *decoder) integer(path string, v any) (int, bool) {
	f, ok := d.number(path, v)
	if !ok {
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		d.fail(path, "must be a whole number")
		return 0, false
	}
	return int(f), true
}

// seconds reads a timeout in seconds: null or 0 means "no bound".
func (d *decoder) seconds(path string, v any) time.Duration {
	if v == nil {
		return 0
	}
	f, ok := d.number(path, v)
	if !ok {
		return 0
	}
	if f < 0 {
		d.fail(path, "must not be negative")
		return 0
	}
	if f > 365*24*3600 {
		d.fail(path, "must be at most one year of seconds")
		return 0
	}
	// Round, not truncate: 1.005 s is 1004999999.9999999 ns in float64, and a
	// truncated value would not survive a marshal/parse round trip.
	return time.Duration(math.Round(f * float64(time.Second)))
}

// maxByteCount bounds byte-count settings: 1 TiB is far past any sane cap
// and well inside both int64 and float64's exact integers.
const maxByteCount = 1 << 40

// byteCount reads a positive whole number of bytes; null means unset (0).
func (d *decoder) byteCount(path string, v any) int64 {
	if v == nil {
		return 0
	}
	f, ok := d.number(path, v)
	if !ok {
		return 0
	}
	if f != math.Trunc(f) || f < 1 || f > maxByteCount {
		d.fail(path, "must be a whole number of bytes from 1 to %d", int64(maxByteCount))
		return 0
	}
	return int64(f)
}

// enum reads a string that must be one of allowed. The message echoes the
// raw (unsubstituted) text only, never a resolved variable.
func (d *decoder) enum(path string, v, raw any, allowed ...string) (string, bool) {
	s, ok := d.str(path, v)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	d.fail(path, "must be one of %s, got %s", quoteList(allowed), showRaw(raw))
	return "", false
}

// showRaw renders a value from the raw document for an error message: a $VAR
// reference by its name, anything else quoted and cut short.
func showRaw(raw any) string {
	s, ok := raw.(string)
	if !ok {
		return JSONType(raw)
	}
	if strings.HasPrefix(s, "$") {
		return "the value of " + s
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// shown is the text of a string value for a message that quotes names
// (DeerFlow's task tool messages): the value as written when it is a $VAR
// reference, so a resolved variable never reaches a message, else resolved.
func shown(raw any, resolved string) string {
	if r, ok := raw.(string); ok && strings.HasPrefix(r, "$") {
		return r
	}
	return resolved
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// rawAt returns the raw value at key in a raw object (nil when absent).
func rawAt(o *Object, key string) any {
	if o == nil {
		return nil
	}
	v, _ := o.Get(key)
	return v
}

// rawObj returns the raw object at key, or nil.
func rawObj(o *Object, key string) *Object {
	r, _ := rawAt(o, key).(*Object)
	return r
}

// extras copies the keys of o that are not in known.
func extras(o *Object, known map[string]bool) *Object {
	var out *Object
	for _, k := range o.Keys() {
		if known[k] {
			continue
		}
		if out == nil {
			out = NewObject()
		}
		v, _ := o.Get(k)
		out.Set(k, clone(v))
	}
	return out
}

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// forbidExtras reports every key of o outside known (for models that forbid
// extra keys, such as routing and task_toolsets).
func (d *decoder) forbidExtras(path string, o *Object, known map[string]bool) {
	for _, k := range o.Keys() {
		if !known[k] {
			d.fail(joinPath(path, k), "unknown field (allowed: %s)", strings.Join(sortedKeys(known), ", "))
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	// small sets: insertion sort keeps this dependency-free and stable
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// checkHeaderNames reports the keys of pairs (the header map at path, called
// label in messages) that cannot be sent as HTTP header names, blank ones
// included, and two keys that name the same header. A name is quoted with
// escapes, so a CR or LF in it never reaches a log line raw.
func (d *decoder) checkHeaderNames(path, label string, pairs Pairs) {
	seen := map[string]string{}
	for _, p := range pairs {
		if strings.TrimSpace(p.Key) == "" {
			d.fail(path, "%s must not contain a blank header name", label)
			continue
		}
		if reason := header.IllegalNameReason(p.Key); reason != "" {
			d.fail(path, "%s: %q cannot be sent as an HTTP header name: it %s", label, p.Key, reason)
			continue
		}
		low := strings.ToLower(p.Key)
		if first, ok := seen[low]; ok {
			d.fail(path, "maps the same HTTP header under two spellings (%q and %q); header names are case-insensitive, so keep only one", first, p.Key)
			continue
		}
		seen[low] = p.Key
	}
}
