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
// (before "=", stripped, lower-cased) must not be an exec flag, -p or a
// load flag (interpreterLoadArg), a single-dash cluster must not contain c,
// e, p or r (-pe, -Ic, -we, -ir), and -m (alone or in a cluster, its module
// attached or next) must not name a module that runs its arguments
// (evalModule) or a value that is not a plain module name.
func interpreterExecArg(args []string) string {
	for i, arg := range args {
		flag, _, _ := strings.Cut(arg, "=")
		flag = strings.ToLower(pyStrip(flag))
		if arbitraryExecArg(flag) || flag == "-p" || interpreterLoadArg(flag) {
			return flag
		}
		if !strings.HasPrefix(flag, "-") || strings.HasPrefix(flag, "--") {
			continue
		}
		tok := pyStrip(arg)
		for j, c := range flag[1:] {
			if clusteredExecLetter(c) || c == 'r' {
				return "-" + string(c)
			}
			if j+1 < len(tok) && tok[j+1] == 'W' {
				if importingWarning(clusterValue(tok, j, args, i)) {
					return "-W"
				}
				break
			}
			if c != 'm' {
				continue
			}
			module := clusterValue(tok, j, args, i)
			if !plainModule(module) || evalModule(module) {
				return "-m"
			}
			break
		}
	}
	return ""
}

// clusterValue is the value of the one-letter option at byte j+1 of the
// single-dash cluster tok (args[i]): the rest of the cluster after an
// optional "=", or, if nothing is left, the next argument.
func clusterValue(tok string, j int, args []string, i int) string {
	v := ""
	if j+2 <= len(tok) {
		v = strings.TrimPrefix(tok[j+2:], "=")
	}
	if v == "" && i+1 < len(args) {
		v = pyStrip(args[i+1])
	}
	return v
}

// importingWarning reports whether a python -W value
// (action:message:category:module:lineno) names a category in a module:
// Python imports that module at start-up to find the class
// (-W ignore::antigravity.x imports antigravity, which runs $BROWSER).
func importingWarning(v string) bool {
	fields := strings.Split(v, ":")
	return len(fields) > 2 && strings.Contains(fields[2], ".")
}

// interpreterLoadArg reports whether flag (lower-cased, "_" read as "-" as
// node does) makes node load code or settings before the program: a module
// to require or import, a loader, an env file (which may set NODE_OPTIONS),
// or the inspector, whose port lets any local process run code.
func interpreterLoadArg(flag string) bool {
	if !strings.HasPrefix(flag, "--") {
		return false
	}
	switch strings.ReplaceAll(flag, "_", "-") {
	case "--require", "--import", "--loader", "--experimental-loader", "--env-file", "--env-file-if-exists",
		"--inspect", "--inspect-brk", "--inspect-wait", "--inspect-port", "--debug-port":
		return true
	}
	return false
}

// evalModule reports whether a module run with python -m runs code its
// arguments give: timeit (statements), cProfile, profile, trace, pdb and
// runpy (another script or module, pdb also -c commands), code and asyncio
// (a console on stdin), idlelib (-c), pickle (unpickles a file), doctest
// and unittest (run files and modules they name), pip (installs and builds
// a package). Compared by top-level package, case-insensitively.
func evalModule(module string) bool {
	top, _, _ := strings.Cut(strings.ToLower(module), ".")
	switch top {
	case "timeit", "cprofile", "profile", "trace", "pdb", "runpy", "code", "asyncio", "idlelib",
		"pickle", "doctest", "unittest", "pip":
		return true
	}
	return false
}

// plainModule reports whether s is a plain module name: letters, digits
// and "_.:/-" (perl's Foo::Bar; "/" and "-" for a program's own -m value).
// perl -M takes "Module;code" and "Module=args", so anything else is
// refused.
func plainModule(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_.:/-", c)) {
			return false
		}
	}
	return true
}
