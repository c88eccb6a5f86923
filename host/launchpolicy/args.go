package launchpolicy

import "strings"

// arbitraryExecArg reports whether flag is in DeerFlow's
// _ARBITRARY_EXEC_ARGS: options that make an interpreter or npx run a string
// as code.
func arbitraryExecArg(flag string) bool {
	switch flag {
	case "-c", "--call", "-e", "--eval", "--print", "--shell", "--node-arg", "--node-options":
		return true
	}
	return false
}

// clusteredExecLetter reports whether c is in DeerFlow's
// _CLUSTERED_EXEC_LETTERS: the letter of every two-character flag in
// _ARBITRARY_EXEC_ARGS ∪ _EXEC_ARGS_OUTSIDE_PACKAGE_LAUNCHERS ({-p}).
func clusteredExecLetter(c rune) bool { return c == 'c' || c == 'e' || c == 'p' }

// grammar is how DeerFlow reads a package launcher's options: which flags
// run code, and whether an option without "=" takes the next token.
type grammar struct {
	execArg       func(flag string) bool
	consumesValue func(token string) bool
}

// npxGrammar: all of _ARBITRARY_EXEC_ARGS; an option takes a value unless it
// is one of npm's boolean options (DeerFlow's _NPX_BOOLEAN_ARGS, here
// generated: npmBooleanArgs minus -p, which npx rewrites to --package).
func npxGrammar() grammar {
	return grammar{
		execArg:       arbitraryExecArg,
		consumesValue: func(tok string) bool { return tok == "-p" || !npmBooleanArg(tok) },
	}
}

// uvxGrammar: the long spellings of _ARBITRARY_EXEC_ARGS as a tripwire (uv
// has none of them); an option takes a value only if uv says so
// (uvxValueArg).
func uvxGrammar() grammar {
	return grammar{
		execArg: func(flag string) bool {
			return strings.HasPrefix(flag, "--") && arbitraryExecArg(flag)
		},
		consumesValue: uvxValueArg,
	}
}

// execArg is DeerFlow's _arbitrary_exec_arg(args, command) with, for npx, the
// check of npm's real parse added (npxExecFlag). It returns the offending
// flag as it will be reported, or "".
func execArg(command string, args []string) string {
	switch strings.ToLower(command) {
	case "npx":
		if flag := launcherExecArg(args, npxGrammar()); flag != "" {
			return flag
		}
		return npxExecFlag(args)
	case "uvx":
		return launcherExecArg(args, uvxGrammar())
	}
	return interpreterExecArg(args)
}

// launcherExecArg screens a package launcher's option region, DeerFlow's
// way: tokens (stripped) up to "--", "-" or the first token not starting with
// "-" (the package), skipping the value of an option that takes one. A flag
// is the part before "="; long flags are compared lower-cased, short ones as
// given (npm's -C is --prefix, not -c). Tokens after the region are the
// package and its own arguments and are not screened.
func launcherExecArg(args []string, g grammar) string {
	var region []string
	for i := 0; i < len(args); i++ {
		tok := pyStrip(args[i])
		if tok == "--" || tok == "-" || !strings.HasPrefix(tok, "-") {
			break
		}
		region = append(region, tok)
		if !strings.Contains(tok, "=") && g.consumesValue(tok) {
			i++
		}
	}
	for _, tok := range region {
		flag, _, _ := strings.Cut(tok, "=")
		if strings.HasPrefix(flag, "--") {
			flag = strings.ToLower(flag)
		}
		if g.execArg(flag) {
			return flag
		}
	}
	return ""
}

// interpreterExecArg screens every argument of a command that is not a
// package launcher (node, python, perl, ... once allowlisted): the flag
// (before "=", stripped, lower-cased) must not be an exec flag or -p, and a
// single-dash cluster must not contain c, e or p (-pe, -Ic, -we).
func interpreterExecArg(args []string) string {
	for _, arg := range args {
		flag, _, _ := strings.Cut(arg, "=")
		flag = strings.ToLower(pyStrip(flag))
		if arbitraryExecArg(flag) || flag == "-p" {
			return flag
		}
		if strings.HasPrefix(flag, "-") && !strings.HasPrefix(flag, "--") {
			for _, c := range flag[1:] {
				if clusteredExecLetter(c) {
					return "-" + string(c)
				}
			}
		}
	}
	return ""
}
