package mcpserver

import (
	"net/http"
	"strings"
	"testing"
)

// secretHeaderByCanonicalKey is what secretHeader must answer: the name
// after the prefix of k's canonical spelling, lower-cased.
func secretHeaderByCanonicalKey(k string) (string, bool) {
	name, ok := strings.CutPrefix(http.CanonicalHeaderKey(k), HeaderSecretPrefix)
	return strings.ToLower(name), ok && name != ""
}

func TestSecretHeader(t *testing.T) {
	for _, tc := range []struct {
		key, name string
		ok        bool
	}{
		{"X-Antler-Secret-Github-Token", "github-token", true},
		{"x-antler-secret-github-token", "github-token", true},
		{"X-ANTLER-SECRET-A", "a", true},
		{"X-Antler-Secret-", "", false},
		{"X-Antler-Secrets-A", "", false},
		{"X-Antler-Thread-Id", "", false},
		{"X-Antler-ſecret-A", "", false},   // U+017F folds to s, but no canonical key has it
		{"x-antler-secret-a b", "", false}, // not a token: net/http leaves it as is
		{"Authorization", "", false},
	} {
		name, ok := secretHeader(tc.key)
		if name != tc.name || ok != tc.ok {
			t.Errorf("secretHeader(%q) = %q, %t; want %q, %t", tc.key, name, ok, tc.name, tc.ok)
		}
	}
}

// FuzzSecretHeader: the prefix check that spares most headers their
// canonicalization never changes which secret a header carries.
func FuzzSecretHeader(f *testing.F) {
	for _, k := range []string{"X-Antler-Secret-A", "x-antler-secret-b", "X-Antler-ſecret-C", "X-Antler-Secret-", "x-antler-secret-a b", "Content-Type", ""} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		name, ok := secretHeader(k)
		wantName, wantOK := secretHeaderByCanonicalKey(k)
		if ok != wantOK || ok && name != wantName {
			t.Errorf("secretHeader(%q) = %q, %t; canonical spelling gives %q, %t", k, name, ok, wantName, wantOK)
		}
	})
}
