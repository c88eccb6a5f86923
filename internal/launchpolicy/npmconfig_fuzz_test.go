package launchpolicy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzNpmConfigSpelling spells every config the policy refuses because it
// names a file, folder or program npm loads (npmPathConfigs,
// npmCommandConfigs, npmCodeConfigs) in the ways npm accepts: as an
// npm_config_ variable with any mix of case and of "-" and "_", and as an
// npx option (--key=v, --key v, extra dashes, behind --yes=, the shortest
// abbreviation nopt expands, --no-key, upper case), ahead of a package. Each
// must be refused, with a message that names the key's spelling and never
// the value.
func FuzzNpmConfigSpelling(f *testing.F) {
	for i := range 40 {
		f.Add(uint16(i), uint64(i)*0x9e3779b97f4a7c15, uint8(i), "/proc/self/environ")
	}
	f.Add(uint16(0), ^uint64(0), uint8(4), "-leading-dash")
	f.Add(uint16(3), uint64(0), uint8(1), "")
	keys := append(append(append([]string{}, npmPathConfigs()...), npmCommandConfigs()...), npmCodeConfigs()...)
	// A value npm parses as an option of its own: "--git=-cBBB" sets git to
	// "" and then call, through the shorthands -c and -B; the message must
	// name --git, not the value.
	for form := range uint8(8) {
		f.Add(uint16(slices.Index(keys, "git")), uint64(0), form, "-cBBB")
		f.Add(uint16(slices.Index(keys, "git")), uint64(0), form, "--cBBB")
		// "acc" abbreviates access, but nopt expands -acc as -a -c -c.
		f.Add(uint16(slices.Index(keys, "git")), uint64(0), form, "-acc")
	}
	p := New()
	f.Fuzz(func(t *testing.T, pick uint16, mask uint64, form uint8, value string) {
		key := keys[int(pick)%len(keys)]
		bit := func(i int) bool { return mask>>(uint(i)%64)&1 == 1 }

		// The environment spelling: npm matches /^npm_config_/i and turns
		// every "_" but a leading one into "-", lower-cased.
		var name strings.Builder
		for i, r := range "npm_config_" + key {
			switch {
			case r == '-' && bit(i):
				name.WriteByte('_')
			case r >= 'a' && r <= 'z' && bit(i+7):
				name.WriteRune(r - 'a' + 'A')
			default:
				name.WriteRune(r)
			}
		}
		env := name.String()
		assertRefused(t, p, Launch{Server: "srv", Command: "npx", Args: []string{"-y", "pkg"}, EnvNames: []string{env, "X"}}, value)

		// The option spellings.
		var args []string
		switch form % 8 {
		case 0:
			args = []string{"--" + key + "=" + value}
		case 1:
			args = []string{"--" + key, value}
		case 2:
			args = []string{"---" + key + "=" + value}
		case 3:
			args = []string{"--yes=--" + key + "=" + value}
		case 4:
			short := key
			for n := 1; n < len(key); n++ {
				if npmAbbrev(key[:n]) == key {
					short = key[:n]
					break
				}
			}
			args = []string{"--" + short + "=" + value}
		case 5:
			args = []string{"--no-" + key}
		case 6:
			args = []string{"-y", "--" + key, value}
		case 7:
			args = []string{"--" + strings.ToUpper(key) + "=" + value}
		}
		assertRefused(t, p, Launch{Server: "srv", Command: "npx", Args: append(args, "-y", "pkg")}, value)
	})
}

func assertRefused(t *testing.T, p *Policy, l Launch, value string) {
	t.Helper()
	err := p.Check(l)
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("npx %q env %q accepted (%v)", l.Args, l.EnvNames, err)
	}
	switch pe.Kind {
	case LauncherConfig, EnvVar, ExecArg, MissingPackage, PathPackage:
	default:
		t.Fatalf("npx %q env %q: kind %d (%v)", l.Args, l.EnvNames, pe.Kind, err)
	}
	if strings.Contains(pe.Flag, "=") || strings.Contains(pe.EnvName, "=") {
		t.Fatalf("reported %q / %q carries a value", pe.Flag, pe.EnvName)
	}
	if len(value) > 3 && strings.Contains(err.Error(), value) {
		shown := false
		for _, a := range append(append([]string{}, l.Args...), l.EnvNames...) {
			if a == value {
				shown = true // the value is also an argument on its own: it may be read as one
			}
		}
		// The value may also be a piece of the message's own words ("nvir"
		// of "environment"): it is shown only if it occurs more often than
		// in the message for the same launch with the value replaced.
		l2 := l
		l2.Args = make([]string, len(l.Args))
		blank := strings.Repeat("q", len(value))
		for i, a := range l.Args {
			switch {
			case a == value:
				l2.Args[i] = blank
			case strings.HasSuffix(a, "="+value):
				l2.Args[i] = strings.TrimSuffix(a, value) + blank
			default:
				l2.Args[i] = a
			}
		}
		without := ""
		if err2 := p.Check(l2); err2 != nil {
			without = err2.Error()
		}
		if !shown && strings.Count(err.Error(), value) > strings.Count(without, value) {
			t.Fatalf("message %q shows the value %q", err, value)
		}
	}
}
