package launchpolicy

import (
	"strings"
	"testing"
)

func TestJSIsNaN(t *testing.T) {
	for s, want := range map[string]bool{
		"": false, " ": false, "5": false, " 5\n": false, "\u00a05\u2003": false, "+5": false, "-5": false,
		".5": false, "5.": false, "1e3": false, "1E-3": false, "0x1F": false, "0o17": false, "0b11": false,
		"Infinity": false, "-Infinity": false, "+Infinity": false,
		".": true, "1e": true, "-0x5": true, "1_000": true, "inf": true, "infinity": true, "0b2": true,
		"abc": true, "5px": true, "--5": true, "0x": true,
	} {
		if got := jsIsNaN(s); got != want {
			t.Errorf("jsIsNaN(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestReplayHandlesLongClusters(t *testing.T) {
	long := "-" + strings.Repeat("y", 5000)
	if f := npxExecFlag([]string{long, "pkg"}); f != "" {
		t.Errorf("a long cluster of -y is refused as %q", f)
	}
	if f := npxExecFlag([]string{long + "c", "code"}); f == "" {
		t.Error("a long cluster ending in c is accepted")
	}
}

func TestShellWord(t *testing.T) {
	for _, ok := range []string{"", "server-bin", "@scope/server", "a.b_c:d,e%f+g", "./bin/x"} {
		if !shellWord(ok) {
			t.Errorf("shellWord(%q) = false", ok)
		}
	}
	for _, bad := range []string{"a b", "a;b", "$(id)", "`id`", "FOO=bar", "~/x", "#x", "a'b", "a*b", "a\nb", "é"} {
		if shellWord(bad) {
			t.Errorf("shellWord(%q) = true", bad)
		}
	}
}
