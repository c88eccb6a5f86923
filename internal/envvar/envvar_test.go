package envvar_test

import (
	"testing"

	"github.com/antler-mcp/antler/internal/envvar"
)

func TestResolve(t *testing.T) {
	lookup := func(name string) (string, bool) {
		switch name {
		case "TOKEN":
			return "tok-123", true
		case "EMPTY":
			return "", true
		case "":
			return "nameless", true
		}
		return "", false
	}
	tests := []struct {
		in        string
		wantValue string
		wantName  string
		wantRef   bool
	}{
		{"$TOKEN", "tok-123", "TOKEN", true},
		{"$NOT_SET", "", "NOT_SET", true},
		{"$EMPTY", "", "EMPTY", true},
		{"$", "nameless", "", true},
		{"$$TOKEN", "", "$TOKEN", true},
		{"${TOKEN}", "", "{TOKEN}", true},
		{"Bearer $TOKEN", "Bearer $TOKEN", "", false},
		{" $TOKEN", " $TOKEN", "", false},
		{"TOKEN", "TOKEN", "", false},
		{"", "", "", false},
		{"plain text", "plain text", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, name, ref := envvar.Resolve(tt.in, lookup)
			if v != tt.wantValue || name != tt.wantName || ref != tt.wantRef {
				t.Errorf("Resolve(%q) = (%q, %q, %v), want (%q, %q, %v)", tt.in, v, name, ref, tt.wantValue, tt.wantName, tt.wantRef)
			}
		})
	}
}

func TestResolveNilLookupUsesProcessEnvironment(t *testing.T) {
	t.Setenv("ANTLER_ENVVAR_TEST", "from-process")
	if v, name, ref := envvar.Resolve("$ANTLER_ENVVAR_TEST", nil); v != "from-process" || name != "ANTLER_ENVVAR_TEST" || !ref {
		t.Errorf("Resolve = (%q, %q, %v)", v, name, ref)
	}
	if v, _, _ := envvar.Resolve("$ANTLER_ENVVAR_TEST_UNSET_9f2c", nil); v != "" {
		t.Errorf("unset variable = %q, want empty", v)
	}
}

func TestOS(t *testing.T) {
	t.Setenv("ANTLER_ENVVAR_OS", "v")
	if v, ok := envvar.OS("ANTLER_ENVVAR_OS"); v != "v" || !ok {
		t.Errorf("OS = (%q, %v)", v, ok)
	}
	t.Setenv("ANTLER_ENVVAR_OS_EMPTY", "")
	if v, ok := envvar.OS("ANTLER_ENVVAR_OS_EMPTY"); v != "" || !ok {
		t.Errorf("OS(empty) = (%q, %v), want set and empty", v, ok)
	}
	if _, ok := envvar.OS("ANTLER_ENVVAR_OS_UNSET_9f2c"); ok {
		t.Error("OS reports an unset variable as set")
	}
}
