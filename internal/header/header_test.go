package header_test

import (
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/header"
)

func TestIllegalValueReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value, want string
	}{
		{"Bearer abc.def", ""},
		{"", ""},
		{"a\tb", ""},       // inner tab allowed
		{"a\x01b\x7f", ""}, // other controls allowed, as in DeerFlow
		{"tök", header.ReasonNonASCII},
		{"Bearer x\n", header.ReasonControl},
		{"a\rb", header.ReasonControl},
		{"a\x00b", header.ReasonControl},
		{"a\x0bb", header.ReasonControl},
		{"a\x0cb", header.ReasonControl},
		{" x", header.ReasonWhitespace},
		{"x\t", header.ReasonWhitespace},
		{"é\n ", header.ReasonNonASCII}, // order: ASCII first
		{"\n ", header.ReasonControl},   // then control characters
	} {
		if got := header.IllegalValueReason(tc.value); got != tc.want {
			t.Errorf("IllegalValueReason(%q) = %q, want %q", tc.value, got, tc.want)
		}
	}
}

func TestApplyLandsOnTheConnectionsSpelling(t *testing.T) {
	t.Parallel()
	base := map[string]string{"authorization": "static", "X-Other": "1"}
	got := header.Apply(base, []header.Override{{"Authorization", "Bearer new"}}, header.Spellings([]string{"authorization"}))
	if len(got) != 2 || got["authorization"] != "Bearer new" || got["X-Other"] != "1" {
		t.Errorf("got %v", got)
	}
	if base["authorization"] != "static" {
		t.Error("base was modified")
	}
}

func TestApplyRemovesEverySecondSpelling(t *testing.T) {
	t.Parallel()
	base := map[string]string{"X-Key": "a", "x-key": "b", "X-KEY": "c"}
	got := header.Apply(base, []header.Override{{"x-Key", "d"}}, header.Spellings([]string{"X-KEY"}))
	if len(got) != 1 || got["X-KEY"] != "d" {
		t.Errorf("got %v, want only X-KEY=d", got)
	}
}

func TestApplyLaterOverrideWins(t *testing.T) {
	t.Parallel()
	got := header.Apply(nil, []header.Override{{"Authorization", "oauth"}, {"AUTHORIZATION", "user"}}, nil)
	if len(got) != 1 || got["Authorization"] != "user" {
		t.Errorf("got %v", got)
	}
}

func FuzzIllegalValueReason(f *testing.F) {
	for _, s := range []string{"Bearer x", " x", "x\n", "é", "\x00", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		reason := header.IllegalValueReason(v)
		if reason == "" {
			return
		}
		if v != "" && len(v) > 3 && strings.Contains(reason, v) {
			t.Fatalf("reason %q contains the value", reason)
		}
		switch reason {
		case header.ReasonNonASCII, header.ReasonControl, header.ReasonWhitespace:
		default:
			t.Fatalf("unknown reason %q", reason)
		}
	})
}

func FuzzApply(f *testing.F) {
	f.Add("Authorization", "authorization", "AUTHORIZATION", "v1", "v2")
	f.Add("X-A", "x-b", "X-A", "", "z")
	f.Fuzz(func(t *testing.T, static, baseKey, override, v1, v2 string) {
		base := map[string]string{baseKey: v1, static: "s"}
		upper := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r - 'a' + 'A'
			}
			return r
		}, override)
		ovs := []header.Override{{override, v1}, {upper, v2}}
		got := header.Apply(base, ovs, header.Spellings([]string{static}))
		// The overridden header appears under exactly one spelling, with the
		// last override's value.
		low := strings.ToLower(override)
		var spellings []string
		for k := range got {
			if strings.ToLower(k) == low {
				spellings = append(spellings, k)
			}
		}
		if len(spellings) != 1 || got[spellings[0]] != v2 {
			t.Fatalf("override %q: spellings %v in %v, want one with %q", override, spellings, got, v2)
		}
	})
}

func TestIllegalNameReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
	}{
		{"Authorization", ""},
		{"X-Api-Key_2", ""},
		{"!#$%&'*+-.^_`|~", ""},
		{"", header.ReasonNameEmpty},
		{"X-Evil\r\nInjected: 1", header.ReasonNameToken},
		{"X-A\n", header.ReasonNameToken},
		{"X A", header.ReasonNameToken},
		{"X:A", header.ReasonNameToken},
		{"X-\x00", header.ReasonNameToken},
		{"X-\x7f", header.ReasonNameToken},
		{"Tök", header.ReasonNameToken},
		{`X"A`, header.ReasonNameToken},
		{"(X)", header.ReasonNameToken},
	} {
		if got := header.IllegalNameReason(tc.name); got != tc.want {
			t.Errorf("IllegalNameReason(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestIsJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		contentType string
		want        bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON", true},
		{"application/json ; charset=UTF-8", true},
		{"", false},
		{"text/plain", false},
		{"application/json-patch+json", false},
		{"application/jsonx", false},
		{"application/json; charset", false}, // a malformed parameter
	} {
		if got := header.IsJSON(tc.contentType); got != tc.want {
			t.Errorf("IsJSON(%q) = %v, want %v", tc.contentType, got, tc.want)
		}
	}
}
