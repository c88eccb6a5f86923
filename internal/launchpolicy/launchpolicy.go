// Package launchpolicy decides whether a stdio MCP server that arrives
// through the config admin API may be started: DeerFlow's stdio launch
// policy (_validate_mcp_update_request), with its tables, order and messages.
//
// A stdio server is a process the host starts with the host's rights, and the
// API is untrusted input, so four checks run in order:
//
//  1. command shape: one executable name, without a path separator,
//     whitespace or a shell metacharacter;
//  2. allowlist: npx and uvx, extended by ANTLER_MCP_STDIO_COMMAND_ALLOWLIST
//     (and DeerFlow's DEER_FLOW_MCP_STDIO_COMMAND_ALLOWLIST);
//  3. arguments: no option that makes the command run a string as code. For
//     the package launchers the options before the package are parsed with
//     the launcher's own grammar (for npx: npm's, generated from npm's code,
//     see npm_options.go and npx.go); the package's own arguments are never
//     screened. For any other command every argument is screened, with
//     single-dash clusters taken apart (-pe is -p and -e);
//  4. environment: no variable that makes a process run code at start-up
//     (NODE_OPTIONS, LD_PRELOAD, PYTHONSTARTUP, ...), by name only.
//
// Between 3 and 4, for npx, no option may name a file, folder or program
// npm loads (userconfig, globalconfig, prefix, cache, git, ...; generated
// from npm's definitions, npmconfig.go) and a package must be given (bare
// npx runs a shell); for npx and uvx the package must not be a file path
// (pathpkg.go): a launcher given a path runs that file. After 4, npm_config_
// variables naming such a file, folder or program (and, for npx, HOME,
// PREFIX, DESTDIR) are refused too, and so is a working directory the
// request chooses (Launch.Cwd): it is where launchers read their project
// configuration.
//
// Before 4, for npx and uvx, the package may not be a launcher, shell or
// interpreter (npm, node, python, ...), a URL, git or archive spec, or
// outside the operator's ANTLER_MCP_STDIO_PACKAGE_ALLOWLIST, and a command
// run beside --package or --from may not be a program on the host's PATH
// (packages.go).
//
// Like DeerFlow's, this is defense in depth, not a trust boundary: an
// allowlisted launcher still runs whatever other package it is pointed at.
// Errors name the server, the command and the offending option, variable or
// package name (or the field cwd), never an argument's, a variable's or the
// cwd's value.
package launchpolicy

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"unicode"
)

//go:generate go run gen_npm.go

// Environment variables that extend the allowlist (comma-separated names).
// Antler's is the one messages point to; DeerFlow's is honoured too so that a
// DeerFlow deployment keeps its setting.
const (
	AllowlistEnv         = "ANTLER_MCP_STDIO_COMMAND_ALLOWLIST"
	DeerFlowAllowlistEnv = "DEER_FLOW_MCP_STDIO_COMMAND_ALLOWLIST"
)

// defaultAllowlist is DeerFlow's _DEFAULT_MCP_STDIO_COMMAND_ALLOWLIST.
func defaultAllowlist() []string { return []string{"npx", "uvx"} }

// Launch is what the policy inspects of one server entry.
type Launch struct {
	Server   string // server name, used in messages
	Type     string // normalised transport: "stdio", "sse" or "http"; only "stdio" is checked
	Command  string
	Args     []string
	EnvNames []string // names of env entries (values are never inspected or echoed)
	// Cwd is the working directory the request chooses, "" for none. A
	// caller that keeps the one the configuration file already gives the
	// server passes "": the policy refuses any other (see WorkingDir).
	Cwd string
}

// Policy holds the allowlist; build it once at startup. It is not changed
// after construction, so one Policy may be used by many goroutines.
type Policy struct {
	allowed map[string]bool
	// packages is the operator's package allowlist (packageKey of each
	// name); nil when none is set.
	packages map[string]bool
	// LookPath finds a program on the host's PATH (exec.LookPath's
	// signature; nil means exec.LookPath). A command run beside npx
	// --package or uvx --from is refused when it finds it. Set it, if at
	// all, before the Policy is used.
	LookPath func(file string) (string, error)
}

func (p *Policy) lookPath() func(string) (string, error) {
	if p.LookPath != nil {
		return p.LookPath
	}
	return exec.LookPath
}

// AllowPackages sets the operator's package allowlist: with one set, every
// package npx or uvx is pointed at must be among names (compared by name,
// without version, case-insensitively; "-", "_" and "." alike, as PyPI
// does). Empty names are dropped; no names leaves any package allowed.
// Call it before the Policy is used; it returns p.
func (p *Policy) AllowPackages(names ...string) *Policy {
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			if p.packages == nil {
				p.packages = map[string]bool{}
			}
			p.packages[packageKey(n)] = true
		}
	}
	return p
}

// FromEnv returns the default allowlist {npx, uvx} plus the comma-separated
// names in ANTLER_MCP_STDIO_COMMAND_ALLOWLIST and
// DEER_FLOW_MCP_STDIO_COMMAND_ALLOWLIST (trimmed, empties dropped, added to
// the defaults), with the package allowlist PackageAllowlistEnv
// (comma-separated names) if set. lookup has os.LookupEnv's signature.
func FromEnv(lookup func(string) (string, bool)) *Policy {
	var extra []string
	for _, name := range []string{AllowlistEnv, DeerFlowAllowlistEnv} {
		v, ok := lookup(name)
		if !ok {
			continue
		}
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				extra = append(extra, item)
			}
		}
	}
	p := New(extra...)
	if v, ok := lookup(PackageAllowlistEnv); ok {
		p.AllowPackages(strings.Split(v, ",")...)
	}
	return p
}

// New returns a policy allowing npx, uvx and the extra command names (used
// as given; names are matched exactly and case-sensitively).
func New(extra ...string) *Policy {
	p := &Policy{allowed: map[string]bool{}}
	for _, c := range defaultAllowlist() {
		p.allowed[c] = true
	}
	for _, c := range extra {
		if c != "" {
			p.allowed[c] = true
		}
	}
	return p
}

// Allowed returns the sorted allowlist.
func (p *Policy) Allowed() []string {
	out := make([]string, 0, len(p.allowed))
	for c := range p.allowed {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Check runs the whole policy (the command's shape, the allowlist,
// code-executing flags, the launcher's own configuration flags and package,
// path packages, the package allowlist, then the environment and working
// directory) and returns the first violation as an *Error. Servers whose
// transport is not stdio are not checked (nil).
func (p *Policy) Check(l Launch) error {
	if !isStdio(l.Type) {
		return nil
	}
	if err := checkCommand(l); err != nil {
		return err
	}
	if !p.allowed[l.Command] {
		return &Error{Kind: DisallowedCommand, Server: l.Server, Command: l.Command, allowed: p.Allowed()}
	}
	if flag := execArg(l.Command, l.Args); flag != "" {
		return &Error{Kind: ExecArg, Server: l.Server, Command: l.Command, Flag: flag}
	}
	if isNpx(l.Command) {
		if flag := npxLoadFlag(l.Args); flag != "" {
			return &Error{Kind: LauncherConfig, Server: l.Server, Command: l.Command, Flag: flag}
		}
		if !npxHasPackage(l.Args) {
			return &Error{Kind: MissingPackage, Server: l.Server, Command: l.Command}
		}
	}
	if strings.ToLower(l.Command) == "uvx" {
		if flag := uvxConfigFlag(l.Args); flag != "" {
			return &Error{Kind: Confinement, Server: l.Server, Command: l.Command, Flag: flag}
		}
	}
	if pathArg(l.Command, l.Args) {
		return &Error{Kind: PathPackage, Server: l.Server, Command: l.Command}
	}
	if err := p.checkPackages(l); err != nil {
		return err
	}
	return checkPlace(l)
}

// isNpx reports whether command is npx (compared as execArg does).
func isNpx(command string) bool { return strings.ToLower(command) == "npx" }

// CheckShape runs only the command shape and environment checks: a targeted
// edit of a disabled server defers the allowlist and argument checks to the
// moment it is enabled (DeerFlow does the same). Non-stdio servers → nil.
func (p *Policy) CheckShape(l Launch) error {
	if !isStdio(l.Type) {
		return nil
	}
	if err := checkCommand(l); err != nil {
		return err
	}
	return checkPlace(l)
}

// checkPlace runs the checks on what the process starts with besides its
// command line: the environment, then the working directory.
func checkPlace(l Launch) error {
	if err := checkEnv(l); err != nil {
		return err
	}
	if l.Cwd != "" {
		return &Error{Kind: WorkingDir, Server: l.Server}
	}
	return nil
}

// isStdio reports whether the (normalised) transport is stdio. An empty type
// is stdio, DeerFlow's default; the comparison also tolerates case and
// surrounding space so that a caller that forgot to normalise fails closed.
func isStdio(typ string) bool {
	t := strings.ToLower(strings.TrimSpace(typ))
	return t == "" || t == "stdio"
}

// Kind says which check failed.
type Kind int

const (
	MissingCommand    Kind = iota + 1 // no command, or only whitespace
	CommandShape                      // not a single executable name
	DisallowedCommand                 // not on the allowlist
	ExecArg                           // an argument that runs a string as code
	EnvVar                            // a code-injecting environment variable
	PathPackage                       // a package launcher given a file path as the package (pathpkg.go)
	LauncherConfig                    // an npm option or variable naming a file, folder or program npm loads (npmconfig.go)
	MissingPackage                    // npx without a package: npm exec runs a shell (npmconfig.go)
	WorkingDir                        // a working directory the request chooses
	Confinement                       // a uv option or variable that names a file or folder uv reads, or turns off the workspace confinement
	LauncherPackage                   // npx or uvx pointed at a launcher, shell or interpreter package, a URL/git/archive spec, a host program, or a package off the operator's list (packages.go)
)

// Error is a launch policy violation. Error() is DeerFlow's message (with
// Antler's allowlist variable), fit for a 400 response: it names the server,
// and, depending on Kind, the command, the offending option or the variable
// name, never a value.
type Error struct {
	Kind    Kind
	Server  string
	Command string // set for DisallowedCommand, ExecArg, PathPackage, MissingPackage and a LauncherConfig flag (a validated command name)
	Flag    string // ExecArg, LauncherConfig: the option as spelled, without its "=value"
	EnvName string // EnvVar, LauncherConfig: the variable's name as given, up to any "="
	// Package is, for LauncherPackage, the package's name (without version)
	// or the command refused, when it is a plain name; "" for a URL, git or
	// archive spec.
	Package string
	allowed []string
	why     packageWhy
}

func (e *Error) Error() string {
	switch e.Kind {
	case MissingCommand:
		return fmt.Sprintf("MCP server '%s' with stdio transport requires a command.", e.Server)
	case CommandShape:
		return fmt.Sprintf("MCP server '%s' command must be a single executable name; put parameters in args instead.", e.Server)
	case DisallowedCommand:
		list := "<none>"
		if len(e.allowed) > 0 {
			list = strings.Join(e.allowed, ", ")
		}
		return fmt.Sprintf("MCP server '%s' uses disallowed stdio command '%s'. Allowed commands: %s. Configure %s to extend this list.",
			e.Server, e.Command, list, AllowlistEnv)
	case ExecArg:
		return fmt.Sprintf("MCP server '%s' passes '%s' to '%s', which would run arbitrary code. Point the server at a package or module instead.",
			e.Server, e.Flag, e.Command)
	case EnvVar:
		return fmt.Sprintf("MCP server '%s' sets environment variable '%s', which would run arbitrary code at process startup.", e.Server, e.EnvName)
	case PathPackage:
		return fmt.Sprintf("MCP server '%s' passes a file path to '%s' as the package to run; name a package instead.", e.Server, e.Command)
	case LauncherConfig:
		if e.Flag != "" {
			return fmt.Sprintf("MCP server '%s' passes '%s' to '%s', which names a file, folder or program that npm would load; only the configuration file may set it.",
				e.Server, e.Flag, e.Command)
		}
		return fmt.Sprintf("MCP server '%s' sets environment variable '%s', which names a file, folder or program that npm would load; only the configuration file may set it.",
			e.Server, e.EnvName)
	case MissingPackage:
		return fmt.Sprintf("MCP server '%s' runs '%s' without a package, which would start a shell; name the package to run.", e.Server, e.Command)
	case WorkingDir:
		return fmt.Sprintf("MCP server '%s' sets 'cwd', the folder launchers read their configuration from; only the configuration file may set it.", e.Server)
	case Confinement:
		if e.Flag != "" {
			return fmt.Sprintf("MCP server '%s' passes '%s' to '%s', which names a file or folder the launcher reads its configuration or packages from; only the configuration file may set it.",
				e.Server, e.Flag, e.Command)
		}
		return fmt.Sprintf("MCP server '%s' sets environment variable '%s', which decides where the launcher reads its configuration or packages from; only the configuration file may set it.",
			e.Server, e.EnvName)
	case LauncherPackage:
		pkg := "a package"
		if e.Package != "" {
			pkg = "'" + e.Package + "'"
		}
		switch e.why {
		case remoteSpec:
			return fmt.Sprintf("MCP server '%s' gives '%s' a URL, git or archive package; name a registry package instead.", e.Server, e.Command)
		case hostCommand:
			return fmt.Sprintf("MCP server '%s' has '%s' run command %s beside the package, which is a program on the host or a launcher; name a command the package provides.",
				e.Server, e.Command, pkg)
		case unlistedPkg:
			return fmt.Sprintf("MCP server '%s' has '%s' run package %s, which is not in %s.", e.Server, e.Command, pkg, PackageAllowlistEnv)
		}
		return fmt.Sprintf("MCP server '%s' has '%s' run package %s, a launcher, shell or interpreter that would run arbitrary code; name the MCP server's package instead.",
			e.Server, e.Command, pkg)
	}
	return fmt.Sprintf("MCP server '%s' violates the stdio launch policy.", e.Server)
}

// shellMetachars is DeerFlow's _SHELL_METACHARS: ; | & ` $ < > LF CR.
const shellMetachars = ";|&`$<>\n\r"

// pySpace reports whether Python's str.isspace holds for r: Go's
// unicode.IsSpace plus the information separators U+001C..U+001F, which
// Python also strips.
func pySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

func pyStrip(s string) string { return strings.TrimFunc(s, pySpace) }

// checkCommand is DeerFlow's _stdio_command_name: the command must be one
// executable name. The shape message never repeats the command, which may
// hold anything.
func checkCommand(l Launch) error {
	stripped := pyStrip(l.Command)
	if stripped == "" {
		return &Error{Kind: MissingCommand, Server: l.Server}
	}
	if stripped != l.Command ||
		strings.ContainsAny(l.Command, `/\`+shellMetachars) ||
		strings.IndexFunc(l.Command, pySpace) >= 0 {
		return &Error{Kind: CommandShape, Server: l.Server}
	}
	return nil
}

// codeInjectingEnv is DeerFlow's _CODE_INJECTING_ENV_VARS, plus BROWSER and
// every PYTHON* variable but pythonSafeEnv's: Python reads many of them at
// start-up, and some import or run what they name (PYTHONWARNINGS imports
// the module of a warning category, antigravity then runs $BROWSER).
// Deliberately not listed (as in DeerFlow): LD_LIBRARY_PATH,
// DYLD_LIBRARY_PATH, NODE_PATH.
func codeInjectingEnv(upper string) bool {
	switch upper {
	case "BASH_ENV", "DYLD_INSERT_LIBRARIES", "ENV", "LD_AUDIT", "LD_PRELOAD", "NODE_OPTIONS",
		"PERL5OPT", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "RUBYOPT", "BROWSER":
		return true
	}
	return strings.HasPrefix(upper, "PYTHON") && !pythonSafeEnv(upper)
}

// pythonSafeEnv lists the PYTHON* variables MCP server configurations
// commonly set that only switch a behaviour on or off or pick an encoding
// or hash seed: none names a file, module or command. (PYTHONIOENCODING's
// codec lookup stays inside the encodings package.)
func pythonSafeEnv(upper string) bool {
	switch upper {
	case "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONFAULTHANDLER":
		return true
	}
	return false
}

// confinementEnv reports whether a variable is one that decides where uv or
// Python read configuration or code from the working directory: the host
// sets UV_NO_CONFIG and PYTHONSAFEPATH for a uvx started in a thread
// workspace and yields to the server's own env, so a request setting one
// (or UV_CONFIG_FILE, a file of its choosing) would turn the protection off.
// npm's counterpart, npm_config_script_shell, is an npm command config.
func confinementEnv(upper string) bool {
	switch upper {
	case "UV_NO_CONFIG", "UV_CONFIG_FILE", "UV_NO_PROJECT", "PYTHONSAFEPATH",
		// uvx's file and folder options (uvxConfigOption) as variables.
		"UV_OVERRIDE", "UV_CONSTRAINT", "UV_BUILD_CONSTRAINT", "UV_FIND_LINKS", "UV_ENV_FILE",
		"UV_PROJECT", "UV_WORKING_DIR", "UV_WORKING_DIRECTORY", "UV_CACHE_DIR":
		return true
	}
	return false
}

// npmExecConfig reports whether key is one of the npm configs that make
// `npx` (npm exec) run a string as code: call (-c), script-shell (--shell),
// node-options, and package, which turns the first positional argument into
// a shell command line (see npx.go). An environment variable npm_config_<name> sets them as well as
// the option does (@npmcli/config loadEnv), so their variable names are
// screened like the code-injecting variables. This is an Antler addition:
// DeerFlow does not screen them.
func npmExecConfig(key string) bool {
	switch key {
	case "call", "script-shell", "node-options", "package":
		return true
	}
	return false
}

// npmEnvConfig returns the npm config an environment variable name sets, as
// @npmcli/config's loadEnv derives it: names matching /^npm_config_/i, the
// rest normalised by npmKey.
func npmEnvConfig(name string) (string, bool) {
	const prefix = "npm_config_"
	if len(name) < len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) {
		return "", false
	}
	return npmKey(name[len(prefix):]), true
}

// checkEnv is DeerFlow's env screen (names only, stripped and upper-cased),
// on the name the child sees (envName), plus the npm config variables above
// and npm_config_prefix (DeerFlow's message), then, with their own message,
// every npm_config_ variable naming a file, folder or program npm loads and,
// for npx, the variables npm locates its config files with (npmconfig.go).
// npm_config_prefix: internal/upstream
// gives npx children a prefix with no global bin folder, because the default
// one (/usr/bin for a Node under /usr) would let `npx bash -c …` run a
// system program; it keeps a prefix set in the server's env as the
// operator's choice, which a request must therefore not make.
func checkEnv(l Launch) error {
	for _, name := range l.EnvNames {
		// Messages name the variable the child would see: a "name" holding
		// "=" carries a value after it.
		seen := envName(name)
		if confinementEnv(strings.ToUpper(pyStrip(seen))) {
			return &Error{Kind: Confinement, Server: l.Server, EnvName: seen}
		}
		if codeInjectingEnv(strings.ToUpper(pyStrip(seen))) {
			return &Error{Kind: EnvVar, Server: l.Server, EnvName: seen}
		}
		for _, n := range []string{seen, pyStrip(seen)} {
			key, ok := npmEnvConfig(n)
			switch {
			case ok && (npmExecConfig(key) || key == "prefix"):
				return &Error{Kind: EnvVar, Server: l.Server, EnvName: seen}
			case ok && npmLoadConfig(key), isNpx(l.Command) && npmLocationVar(n):
				return &Error{Kind: LauncherConfig, Server: l.Server, EnvName: seen}
			}
		}
	}
	return nil
}
