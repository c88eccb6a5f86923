// Package envvar implements DeerFlow's whole-string environment substitution:
// a configuration string that starts with "$" is replaced by the value of the
// variable named by the rest of the string. "Bearer $TOKEN" stays literal, and
// an unset variable becomes "" (never the literal "$NAME"), so a missing secret
// fails closed instead of being sent as text.
package envvar

import "os"

// Lookup reports the value of an environment variable, like os.LookupEnv.
type Lookup func(name string) (string, bool)

// OS looks variables up in the process environment.
func OS(name string) (string, bool) { return os.LookupEnv(name) }

// Resolve substitutes s. It reports the variable name when s was a reference,
// so callers can name the variable (never its value) in an error.
func Resolve(s string, lookup Lookup) (value string, name string, isRef bool) {
	if len(s) == 0 || s[0] != '$' {
		return s, "", false
	}
	name = s[1:]
	if lookup == nil {
		lookup = OS
	}
	v, _ := lookup(name)
	return v, name, true
}
