package launchpolicy

import (
	"slices"
	"strings"
	"unicode"
)

// This file replays how npx 10.9.4 reads its command line, to find the
// options that make it run a string as code before it reaches the package.
// DeerFlow's screen (launcherExecArg) reads the options with a simplified
// grammar; npm's real one differs in ways that matter (found by the test
// against npm's own parser, oracle_test.go):
//
//   - nopt splits single-dash and double-dash clusters of one-letter
//     shorthands: -yc and --yc are --yes --call;
//   - nopt accepts any number of leading dashes (---call) and unique
//     abbreviations (--scr is --script-shell, --node-o is --node-options);
//   - npx-cli.js rewrites -p, --p and -shell/--shell by key, whatever the
//     number of dashes;
//   - nopt splits "--opt=value" and then parses the value as a token of its
//     own when the option does not take it (--yes=--call=code sets call);
//   - an unknown option takes the next token only when it does not start
//     with "-", and nopt keeps parsing options after a positional argument
//     that npx-cli.js took as a value; a boolean that also accepts strings
//     (--browser, --no-<string option>) swallows the "--" npx-cli.js inserts
//     before the package, so the options after the package are parsed too.
//
// So npxExecFlag runs both stages as npm does: npxTransform is
// bin/npx-cli.js's loop, noptParse is nopt 8.1.0's parse(), both over the
// tables generated from npm's code (npm_options.go). The result names the
// option that sets call (-c), script-shell (--shell) or node-options, the
// three configs through which `npm exec` runs a string, or the option that
// sets package when the first positional argument, which npm exec then hands
// unescaped to the shell as the command line, is not a plain word.

// npmType is how nopt's parse() sees a config's type (after unwrapping a
// one-element type array).
type npmType struct {
	typeArray  bool     // a type array (several accepted types)
	boolean    bool     // Boolean, or a type array listing Boolean
	stringOnly bool     // exactly String
	hasString  bool     // a type array listing String
	hasNumber  bool     // a type array listing Number
	nullOnly   bool     // exactly null
	hasNull    bool     // a type array listing null
	literals   []string // string values a type array lists ("always", "prod", ...)
}

// npxToken is one command-line token while npx and nopt rewrite the line.
type npxToken struct {
	text string
	// disp is the flag to report for a token that npx-cli.js or nopt made
	// (a shorthand's expansion, a rewrite of -p or --shell): the flag of the
	// token it came from. "" when text is a piece of the user's own argument.
	disp string
}

// flag is what a message names for t: disp, or t's text before "=".
func (t npxToken) flag() string {
	if t.disp != "" {
		return t.disp
	}
	f, _, _ := strings.Cut(t.text, "=")
	return f
}

// npmAssign is one config that nopt's parse() set.
type npmAssign struct {
	key   string // config name, after abbreviation and "no-" prefixes
	flag  string // the option as the user spelled it (see npxToken.flag)
	value string // the token taken as its value, for an option that is not a switch; "" if none
}

// npxExecFlag returns the option through which npx would run a string as
// code, or "".
func npxExecFlag(args []string) string {
	argv, ok := npxTransform(args)
	if !ok {
		return failClosedFlag(args)
	}
	sets, remain, ok := noptParse(argv)
	if !ok {
		return failClosedFlag(args)
	}
	pkgFlag := ""
	for _, s := range sets {
		switch s.key {
		case "call", "script-shell", "node-options":
			return s.flag
		case "package":
			if pkgFlag == "" {
				pkgFlag = s.flag
			}
		}
	}
	if pkgFlag != "" && len(remain) > 0 && !shellWord(remain[0].text) {
		return pkgFlag
	}
	return ""
}

// failClosedFlag is reported when a line makes the replay loop longer than
// any real line could (a shorthand table that expands into itself): the
// first option, or "--" if there is none.
func failClosedFlag(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			f, _, _ := strings.Cut(a, "=")
			return f
		}
	}
	return "--"
}

// stepLimit bounds the replay loops over toks. A token takes a few steps, and
// a cluster of one-letter shorthands expands to at most two tokens per
// letter, so real lines stay far below it.
func stepLimit(toks []npxToken) int {
	n := 64
	for _, t := range toks {
		n += 16 * (1 + len(t.text))
	}
	return n
}

// shellWord reports whether s reaches `sh -c` as one plain word: empty, or
// only letters, digits and @%+:,./_- (no whitespace, quote, glob, "=",
// "~", "#" or metacharacter).
func shellWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("@%+:,./_-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// npxTransform is the loop of npm 10.9.4's bin/npx-cli.js over the
// arguments after `npx`: it rewrites -p to --package and --shell to
// --script-shell, expands shorthands, drops removed options, skips option
// values, and puts "--" before the first positional argument. ok is false
// only if the step limit was hit.
func npxTransform(args []string) (argv []npxToken, ok bool) {
	argv = make([]npxToken, len(args))
	for i, a := range args {
		argv[i] = npxToken{text: a}
	}
	steps, limit := 0, stepLimit(argv)
	for i := 0; i < len(argv); i++ {
		if steps++; steps > limit {
			return nil, false
		}
		arg := argv[i].text
		if arg == "--" {
			break
		}
		if !strings.HasPrefix(arg, "-") {
			argv = slices.Insert(argv, i, npxToken{text: "--"})
			break
		}
		parts := strings.Split(strings.TrimLeft(arg, "-"), "=")
		key, v := parts[0], parts[1:]
		switch key {
		case "p":
			argv[i] = npxToken{text: strings.Join(append([]string{"--package"}, v...), "="), disp: argv[i].flag()}
		case "shell":
			argv[i] = npxToken{text: strings.Join(append([]string{"--script-shell"}, v...), "="), disp: argv[i].flag()}
		case "no-install":
			argv[i] = npxToken{text: "--yes=false", disp: argv[i].flag()}
		default:
			if exp := npmShorthand(key); exp != nil && !npxRemoved(key) {
				a := make([]npxToken, 0, len(exp)+1)
				for _, e := range exp {
					a = append(a, npxToken{text: e, disp: argv[i].flag()})
				}
				if len(v) > 0 {
					a = append(a, npxToken{text: strings.Join(v, "=")})
				}
				argv = slices.Replace(argv, i, i+1, a...)
				i--
				continue
			}
		}
		removed := npxRemoved(key)
		if removed {
			argv = slices.Delete(argv, i, i+1)
			i--
		}
		nextIsDash := i+1 < len(argv) && strings.HasPrefix(argv[i+1].text, "-")
		if len(v) == 0 && !npxSwitch(key) && (npxValueOption(key) || !nextIsDash) {
			if removed {
				if i+1 < len(argv) {
					argv = slices.Delete(argv, i+1, i+2)
				}
			} else {
				i++
			}
		}
	}
	return argv, true
}

// noptParse is nopt 8.1.0's parse() (lib/nopt-lib.js) over npm's types and
// shorthands, reduced to what decides which configs are set: which tokens
// are options, which are taken as values, and which are positional
// (remain). ok is false only if the step limit was hit.
func noptParse(in []npxToken) (sets []npmAssign, remain []npxToken, ok bool) {
	args := slices.Clone(in)
	steps, limit := 0, stepLimit(in)
	for i := 0; i < len(args); i++ {
		if steps++; steps > limit {
			return nil, nil, false
		}
		arg := args[i].text
		if allDashes(arg) {
			remain = append(remain, args[i+1:]...)
			break
		}
		if !(len(arg) > 1 && arg[0] == '-') {
			remain = append(remain, args[i])
			continue
		}
		hadEq := false
		if at := strings.IndexByte(arg, '='); at >= 0 {
			hadEq = true
			left := npxToken{text: arg[:at], disp: args[i].disp}
			args = slices.Replace(args, i, i+1, left, valuePiece(arg[at+1:], left))
			arg = left.text
		}
		if exp, ok := noptResolveShort(arg); ok {
			a := make([]npxToken, len(exp))
			for j, e := range exp {
				a[j] = npxToken{text: e, disp: args[i].flag()}
			}
			args = slices.Replace(args, i, i+1, a...)
			if len(exp) == 0 || arg != exp[0] {
				i--
				continue
			}
		}
		opt := i
		key := strings.TrimLeft(arg, "-")
		// "no-" prefixes (any case) make the option a boolean; which value it
		// gets does not matter here, only that it is set.
		noSet := false
		for len(key) >= 3 && (key[0]|0x20) == 'n' && (key[1]|0x20) == 'o' && key[2] == '-' {
			noSet = true
			key = key[3:]
		}
		if ab := npmAbbrev(key); ab != "" && ab != key {
			key = ab
		}
		typ, known := npmConfig(key)
		la, haveLa := "", i+1 < len(args)
		if haveLa {
			la = args[i+1].text
		}
		isBool := noSet || typ.boolean || (!known && !hadEq) ||
			(haveLa && la == "false" && (typ.nullOnly || typ.typeArray && typ.hasNull))
		if isBool {
			if haveLa && (la == "true" || la == "false") {
				i++
				haveLa = false
			}
			if typ.typeArray && haveLa && la != "" {
				switch {
				case slices.Contains(typ.literals, la):
					i++
				case la == "null" && typ.hasNull:
					i++
				case !dashesThenNonDash(la, 2) && !jsIsNaN(la) && typ.hasNumber:
					i++
				case !dashesThenNonDash(la, 1) && typ.hasString:
					i++
				}
			}
			sets = append(sets, npmAssign{key: key, flag: args[opt].flag()})
			continue
		}
		if known && typ.stringOnly {
			if !haveLa {
				la, haveLa = "", true
			} else if oneOrTwoDashesThenNonDash(la) {
				la = ""
				i--
			}
		}
		value := la
		if !haveLa || allDashes(la) {
			value = ""
		}
		if haveLa && la != "" && allDashes(la) {
			i--
		}
		i++
		sets = append(sets, npmAssign{key: key, flag: args[opt].flag(), value: value})
	}
	return sets, remain, true
}

// noptResolveShort is nopt's resolveShort(): the expansion of a shorthand, of
// a cluster of one-letter shorthands, or of an abbreviated shorthand; ok is
// false when arg is not one (an exact or abbreviated config name wins).
func noptResolveShort(arg string) (exp []string, ok bool) {
	a := strings.TrimLeft(arg, "-")
	if a != "" && npmAbbrev(a) == a {
		return nil, false
	}
	if sh := npmShorthand(a); sh != nil {
		return sh, true
	}
	if singles, ok := singleShorthands(a); ok {
		return singles, true
	}
	if npmAbbrev(a) != "" {
		return nil, false
	}
	if sa := npmShortAbbrev(a); sa != "" {
		a = sa
	}
	if sh := npmShorthand(a); sh != nil {
		return sh, true
	}
	return nil, false
}

// singleShorthands expands a when every character is a one-letter
// shorthand (nopt's singleCharacters; "" yields an empty expansion).
func singleShorthands(a string) ([]string, bool) {
	var out []string
	for i := 0; i < len(a); i++ {
		if a[i] >= 0x80 {
			return nil, false
		}
		sh := npmShorthand(a[i : i+1])
		if sh == nil {
			return nil, false
		}
		out = append(out, sh...)
	}
	return out, true
}

// allDashes is /^-{2,}$/.
func allDashes(s string) bool {
	return len(s) >= 2 && strings.Trim(s, "-") == ""
}

// dashesThenNonDash is /^-{min,}[^-]/ for min 1 (written /^-[^-]/ in nopt)
// and 2.
func dashesThenNonDash(s string, min int) bool {
	if min == 1 {
		return len(s) >= 2 && s[0] == '-' && s[1] != '-'
	}
	n := len(s) - len(strings.TrimLeft(s, "-"))
	return n >= min && n < len(s)
}

// oneOrTwoDashesThenNonDash is /^-{1,2}[^-]+/.
func oneOrTwoDashesThenNonDash(s string) bool {
	if len(s) >= 2 && s[0] == '-' && s[1] != '-' {
		return true
	}
	return len(s) >= 3 && s[0] == '-' && s[1] == '-' && s[2] != '-'
}

// jsIsNaN is JavaScript's isNaN(s) for a string: whether Number(s) is NaN.
func jsIsNaN(s string) bool {
	s = strings.TrimFunc(s, jsSpace)
	if s == "" {
		return false
	}
	if len(s) > 2 && s[0] == '0' {
		digits := ""
		switch s[1] {
		case 'x', 'X':
			digits = "0123456789abcdefABCDEF"
		case 'o', 'O':
			digits = "01234567"
		case 'b', 'B':
			digits = "01"
		}
		if digits != "" {
			return strings.Trim(s[2:], digits) != ""
		}
	}
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	if s == "Infinity" {
		return false
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	i, intDigits, fracDigits := 0, 0, 0
	for i < len(s) && isDigit(s[i]) {
		i++
		intDigits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			fracDigits++
		}
	}
	if intDigits+fracDigits == 0 {
		return true
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		expDigits := 0
		for i < len(s) && isDigit(s[i]) {
			i++
			expDigits++
		}
		if expDigits == 0 {
			return true
		}
	}
	return i != len(s)
}

// jsSpace is JavaScript's StrWhiteSpaceChar: WhiteSpace and LineTerminator.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0xfeff, 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// valuePiece is the token nopt makes of the value of "--opt=value", which it
// parses again as an option when opt does not take it. A value that names a
// config ("--yes=--call=code") is reported by that name, as spelled; any
// other ("--git=-cBBB" or "--git=-acc", a shorthand cluster whose letters
// are a payload too)
// by the option it was the value of, so that a message never shows a value.
func valuePiece(value string, opt npxToken) npxToken {
	name, _, _ := strings.Cut(value, "=")
	key := strings.TrimLeft(name, "-")
	for len(key) >= 3 && (key[0]|0x20) == 'n' && (key[1]|0x20) == 'o' && key[2] == '-' {
		key = key[3:]
	}
	if key != "" && npmAbbrev(key) != "" {
		// A name nopt takes apart as shorthands ("-acc" is -a -c -c, though
		// "acc" also abbreviates "access") is a payload, not a name.
		if _, short := noptResolveShort(name); !short {
			return npxToken{text: value}
		}
	}
	return npxToken{text: value, disp: opt.flag()}
}
