package launchpolicy

import (
	"slices"
	"strings"
)

// npm reads its settings from more places than its command line: the
// npm_config_<key> variables, and the config files those (and options such
// as --userconfig, --globalconfig, --prefix) name. A file the request names
// can be one the request also fills: /proc/self/environ holds the child's
// own environment, so a variable whose value is "\ncall=touch /tmp/x\n"
// becomes a `call` line of a userconfig pointed there, and npx with no
// package runs it. So the configs that name a file, a folder or a program,
// and the variables npm derives its config files' places from, are refused
// in every spelling npm accepts: any npm_config_ variable (any case, "-" or
// "_"), and every option spelling the replay in npx.go resolves
// (abbreviations, negations, shorthands, values smuggled behind "="). The
// lists are generated from npm's own definitions (npm_options.go): every
// config of nopt's path type, plus the few String configs npmgen tags as
// commands and the keys and variables it tags as read by npm's code.

// npmKey is a config key as npm sees it after a round through the
// environment: @npmcli/config's loadEnv turns every "_" but a leading one
// into "-" and lower-cases the key (nerf-darted "//host/:key" keys are kept
// as they are), and npm exports every config it was given, option or not,
// to its children under that name, so a child npm reads "--USERCONFIG=x" as
// userconfig.
func npmKey(key string) string {
	if strings.HasPrefix(key, "//") {
		return key
	}
	var b strings.Builder
	for i, r := range key {
		if r == '_' && i > 0 {
			b.WriteByte('-')
			continue
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}

// npmLoadConfig reports whether npm key names a file, folder or program npm
// would load settings, packages or code from (npmPathConfigs,
// npmCommandConfigs, npmCodeConfigs). key is normalised with npmKey.
func npmLoadConfig(key string) bool {
	for _, list := range [][]string{npmPathConfigs(), npmCommandConfigs(), npmCodeConfigs()} {
		if slices.Contains(list, key) {
			return true
		}
	}
	return false
}

// npmLocationVar reports whether an environment variable is one npm derives
// its config files' places from (npmLocationEnv), in any case.
func npmLocationVar(name string) bool {
	for _, v := range npmLocationEnv() {
		if strings.EqualFold(v, name) {
			return true
		}
	}
	return false
}

// envName is the name a child process sees for an env entry: the host
// passes "<name>=<value>", so a name holding "=" is cut there (a "name"
// NODE_OPTIONS=--require with the value /x.js sets NODE_OPTIONS).
func envName(name string) string {
	if i := strings.IndexByte(name, '='); i >= 0 {
		return name[:i]
	}
	return name
}

// npxParse replays how npx reads args (npx.go); ok is false only when the
// replay hit its step limit (execArg has refused such a line already).
func npxParse(args []string) (sets []npmAssign, remain []npxToken, ok bool) {
	argv, ok := npxTransform(args)
	if !ok {
		return nil, nil, false
	}
	return noptParse(argv)
}

// npxLoadFlag returns the option through which npx would be told a file,
// folder or program to load (npmLoadConfig), as spelled, or "".
func npxLoadFlag(args []string) string {
	sets, _, ok := npxParse(args)
	if !ok {
		return failClosedFlag(args)
	}
	for _, s := range sets {
		if npmLoadConfig(npmKey(s.key)) {
			return s.flag
		}
	}
	return ""
}

// npxHasPackage reports whether npx, as npm parses args, gets a first
// positional argument that is not empty. Without one, npm exec runs its
// script shell (sh) on the child's stdin, which is the host's pipe, or runs
// a `call` some config file sets.
func npxHasPackage(args []string) bool {
	_, remain, ok := npxParse(args)
	return ok && len(remain) > 0 && remain[0].text != ""
}
