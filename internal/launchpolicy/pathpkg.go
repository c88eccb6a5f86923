package launchpolicy

import "strings"

// A package launcher given a file path instead of a package runs that file:
// npx looks its first argument up in node_modules/.bin folders with
// path.resolve, so an absolute path (/bin/sh) or one that climbs out
// (../../bin/sh, node_modules/../../bin/sh) names any executable on the
// host, and npm-package-arg reads ./dir, ~/dir, file:…, c:…, a name with two
// slashes or a tarball name as a folder or archive to install and run.
// uvx installs a local path given as the package, or to --from or --with,
// and runs its build backend. So for npx and uvx the package argument, and
// the value of the options that name packages to install (npx --package,
// uvx --from, --with, --with-editable), must not be a path. This is an
// Antler addition; DeerFlow does not check it.

// pathArg reports whether a package launcher's arguments pass a file path
// where a package belongs.
func pathArg(command string, args []string) bool {
	switch strings.ToLower(command) {
	case "npx":
		return npxPathArg(args)
	case "uvx":
		return uvxPathArg(args)
	}
	return false
}

// npxPathArg looks at the package as DeerFlow's grammar finds it and as npm
// does (the replay in npx.go): the first positional argument, which npx runs
// or, with --package, hands to the shell as the command, and every value of
// --package.
func npxPathArg(args []string) bool {
	if pkg, ok := launcherPositional(args, npxGrammar()); ok && pathSpec(pkg) {
		return true
	}
	argv, ok := npxTransform(args)
	if !ok {
		return false // refused already: see failClosedFlag
	}
	sets, remain, ok := noptParse(argv)
	if !ok {
		return false
	}
	if len(remain) > 0 && pathSpec(remain[0].text) {
		return true
	}
	for _, s := range sets {
		if s.key == "package" && pathSpec(s.value) {
			return true
		}
	}
	return false
}

// uvxPackageOption reports whether flag is a uvx option whose value is a
// package to install (uv 0.11: --from, --with / -w, --with-editable).
func uvxPackageOption(flag string) bool {
	switch flag {
	case "--from", "--with", "-w", "--with-editable":
		return true
	}
	return false
}

// uvxPathArg looks at the package as DeerFlow's grammar finds it and at the
// values of uvx's package options, as "--opt value", "--opt=value" or
// "-wvalue".
func uvxPathArg(args []string) bool {
	if pkg, ok := launcherPositional(args, uvxGrammar()); ok && pathSpec(pkg) {
		return true
	}
	for _, o := range uvxOptions(args) {
		if uvxPackageOption(o.flag) && pathSpec(o.value) {
			return true
		}
	}
	return false
}

// uvxOption is one of uvx's own options (before the command): the flag as
// spelled (long ones up to "="), and its value if it takes one.
type uvxOption struct{ flag, value string }

// uvxOptions reads uvx's own options as clap does: "--opt value",
// "--opt=value", and single-dash clusters of one-letter options, where the
// first letter that takes a value takes the rest of the cluster (after an
// optional "=") or, if nothing is left, the next token (-qcfile, -qc file,
// -w=pkg). It stops at "--", "-" or the first token not starting with "-".
func uvxOptions(args []string) []uvxOption {
	var out []uvxOption
	for i := 0; i < len(args); i++ {
		tok := pyStrip(args[i])
		if tok == "--" || tok == "-" || !strings.HasPrefix(tok, "-") {
			break
		}
		if strings.HasPrefix(tok, "--") {
			flag, value, hasEq := strings.Cut(tok, "=")
			if !hasEq && uvxValueArg(flag) && i+1 < len(args) {
				i++
				value = args[i]
			}
			out = append(out, uvxOption{flag, value})
			continue
		}
		for j := 1; j < len(tok); j++ {
			flag := "-" + tok[j:j+1]
			if !uvxValueArg(flag) {
				out = append(out, uvxOption{flag: flag})
				continue
			}
			value := strings.TrimPrefix(tok[j+1:], "=")
			if j+1 == len(tok) && i+1 < len(args) {
				i++
				value = args[i]
			}
			out = append(out, uvxOption{flag, value})
			break
		}
	}
	return out
}

// uvxConfigOption reports whether flag (as uvxOptions spells it) is a uvx
// option naming a file or folder uv reads its configuration, requirements
// or packages from: uv.toml (--config-file), requirement, constraint and
// override files, an env file, a find-links folder or page, and the
// project, working or cache folder (the working directory is refused for
// the same reason, see WorkingDir). uv's own aliases are listed too.
func uvxConfigOption(flag string) bool {
	switch strings.ToLower(flag) {
	case "--config-file", "--with-requirements", "--overrides", "--override",
		"--constraints", "--constraint", "--build-constraints", "--build-constraint",
		"--env-file", "--find-links", "--directory", "--project", "--cache-dir":
		return true
	}
	switch flag {
	case "-c", "-b", "-f":
		return true
	}
	return false
}

// uvxConfigFlag returns the first uvx option, among uvx's own options, that
// names a file or folder uv reads (uvxConfigOption), as spelled without
// "=value", or "". DeerFlow's grammar is consulted too, so that a token it
// reads as an option is screened even where clap's reading differs.
func uvxConfigFlag(args []string) string {
	for _, o := range uvxOptions(args) {
		if uvxConfigOption(o.flag) {
			return o.flag
		}
	}
	g := uvxGrammar()
	for i := 0; i < len(args); i++ {
		tok := pyStrip(args[i])
		if tok == "--" || tok == "-" || !strings.HasPrefix(tok, "-") {
			break
		}
		flag, _, hasEq := strings.Cut(tok, "=")
		if uvxConfigOption(flag) {
			return flag
		}
		if !hasEq && g.consumesValue(tok) {
			i++
		}
	}
	return ""
}

// launcherPositional returns the package as DeerFlow's region ends
// (launcherExecArg): the token after "--", or the first token that does not
// start with "-" (or is "-"), skipping option values.
func launcherPositional(args []string, g grammar) (string, bool) {
	for i := 0; i < len(args); i++ {
		tok := pyStrip(args[i])
		if tok == "--" {
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		}
		if tok == "-" || !strings.HasPrefix(tok, "-") {
			return args[i], true
		}
		if !strings.Contains(tok, "=") && g.consumesValue(tok) {
			i++
		}
	}
	return "", false
}

// pathSpec reports whether s, given to npx or uvx as a package, names a file
// or folder rather than a package. Paths: anything starting with "/", "." or
// "~"; a backslash; a ".." segment; "file:" anywhere (file: specs,
// git+file: URLs, PEP 508 "name @ file://…"); a drive letter ("c:…", a path
// to npm); more than one "/" before any "#" in a spec without ":" (npm: a
// folder, not a GitHub user/repo); an archive name (.tgz, .tar, .tar.gz,
// .whl, .zip) outside a URL or scope; and for name@spec, a spec that is a
// path to npm (starting with ".", "/", "~/" or a drive letter, or an
// archive name). Scoped names (@scope/pkg), user/repo, name@1.2.3, ~1.2
// ranges, git and https URLs are packages.
func pathSpec(s string) bool {
	t := pyStrip(s)
	if t == "" {
		return false
	}
	if t[0] == '/' || t[0] == '.' || t[0] == '~' || driveLetter(t) || strings.ContainsRune(t, '\\') {
		return true
	}
	if strings.Contains(strings.ToLower(t), "file:") {
		return true
	}
	for _, seg := range strings.Split(t, "/") {
		if seg == ".." {
			return true
		}
	}
	// npm-package-arg reads an argument that is neither a URL nor a git
	// remote, with a "/" in its name, as a folder unless it is a GitHub
	// user/repo[#ref], and a name ending like an archive as a file.
	if !urlSpec(t) && !scpGit(t) {
		beforeHash, _, _ := strings.Cut(t, "#")
		if strings.Count(beforeHash, "/") >= 2 {
			return true
		}
		if t[0] != '@' && archiveName(t) {
			return true
		}
	}
	// name@spec (npm-package-arg: the first "@" after the first character),
	// unless the whole argument is a URL.
	if at := strings.IndexByte(t[1:], '@'); at >= 0 && !urlSpec(t) {
		spec := t[at+2:]
		if spec != "" && (spec[0] == '.' || spec[0] == '/' || strings.HasPrefix(spec, "~/") || driveLetter(spec) ||
			(!strings.Contains(spec, ":") && archiveName(spec))) {
			return true
		}
	}
	return false
}

// scpGit is npm-package-arg's isGit, /^[^@]+@[^:.]+\.[^:]+:.+$/i (an
// scp-like git remote, git@github.com:user/repo).
func scpGit(s string) bool {
	user, rest, ok := strings.Cut(s, "@")
	if !ok || user == "" {
		return false
	}
	host, path, ok := strings.Cut(rest, ":")
	if !ok || path == "" {
		return false
	}
	dot := strings.IndexByte(host, '.')
	return dot > 0 && dot < len(host)-1
}

// urlSpec is npm-package-arg's isURL, /^(?:git[+])?[a-z]+:/i.
func urlSpec(s string) bool {
	l := strings.TrimPrefix(strings.ToLower(s), "git+")
	i := 0
	for i < len(l) && l[i] >= 'a' && l[i] <= 'z' {
		i++
	}
	return i > 0 && i < len(l) && l[i] == ':'
}

// driveLetter reports whether s starts with a letter and ":" (npm reads
// "c:..." as a Windows path on every platform).
func driveLetter(s string) bool {
	return len(s) >= 2 && s[1] == ':' && (s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z')
}

// archiveName reports whether s ends like a package archive file.
func archiveName(s string) bool {
	l := strings.ToLower(s)
	for _, ext := range []string{".tgz", ".tar", ".tar.gz", ".whl", ".zip"} {
		if strings.HasSuffix(l, ext) {
			return true
		}
	}
	return false
}
