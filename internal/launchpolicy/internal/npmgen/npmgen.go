// Package npmgen writes internal/launchpolicy/npm_options.go: the option tables
// npx uses to parse its command line, read from a pinned npm's own code by
// dump.js (run with the node on PATH). It is used by `go generate` (through
// gen_npm.go) and by the test that checks the generated file is up to date,
// so both produce byte-identical output.
package npmgen

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"go/format"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

//go:embed dump.js
var dumpScript string

// Tables is what dump.js reports.
type Tables struct {
	NPMVersion   string              `json:"npmVersion"`
	NoptVersion  string              `json:"noptVersion"`
	Configs      []Config            `json:"configs"`
	Shorthands   map[string][]string `json:"shorthands"`
	Abbrevs      map[string]string   `json:"abbrevs"`
	ShortAbbrevs map[string]string   `json:"shortAbbrevs"`
	Sources      []Source            `json:"sources"`
	NPX          struct {
		RemovedSwitches []string `json:"removedSwitches"`
		RemovedOpts     []string `json:"removedOpts"`
		Switches        []string `json:"switches"`
		Opts            []string `json:"opts"`
	} `json:"npx"`
}

// Config is how nopt sees one config's type (see dump.js).
type Config struct {
	Name       string   `json:"name"`
	TypeArray  bool     `json:"typeArray"`
	Boolean    bool     `json:"boolean"`
	StringOnly bool     `json:"stringOnly"`
	HasString  bool     `json:"hasString"`
	HasNumber  bool     `json:"hasNumber"`
	NullOnly   bool     `json:"nullOnly"`
	HasNull    bool     `json:"hasNull"`
	Literals   []string `json:"literals"`
	Path       bool     `json:"path"` // nopt's path type: the value names a file or folder
}

// Source is dump.js's answer for one needle: whether module (resolved from
// npm's bin folder) still contains it.
type Source struct {
	Module string `json:"module"`
	Needle string `json:"needle"`
	Found  bool   `json:"found"`
}

// Tag is a name npm's config types cannot tell apart, tagged by hand: a
// String config whose value is a program or code, or a name npm's code reads
// outside the config definitions (then Module and Needle say where, and
// generation fails when npm no longer contains Needle there).
type Tag struct {
	Name   string
	Reason string
	Module string // module id resolved from npm's bin folder; "" for a config definition
	Needle string
}

// CommandConfigs are the config definitions typed String (or null|String)
// whose value npm runs as a program or hands to node as code. Their type
// does not say so, so they are tagged here; generation fails when one is no
// longer a String config of the pinned npm.
var CommandConfigs = []Tag{
	{Name: "call", Reason: "the command line npm exec (npx -c) runs in a shell"},
	{Name: "script-shell", Reason: "the shell npm exec and lifecycle scripts run their command lines with"},
	{Name: "node-options", Reason: "exported as NODE_OPTIONS to every node npm starts (--require and --import load code)"},
	{Name: "git", Reason: "the program npm runs to fetch a git dependency (npx github:user/repo)"},
	{Name: "shell", Reason: "the shell npm explore starts"},
	{Name: "editor", Reason: "the program npm edit and npm config edit start (exported as EDITOR)"},
	{Name: "browser", Reason: "the program npm opens web pages with (npm docs, npm login)"},
	{Name: "viewer", Reason: "the program npm help shows pages with"},
}

// CodeConfigs are keys npm's code reads that no config definition declares.
// npm loads any npm_config_<key> variable and any --<key>=value option as a
// config and exports every config it was given to the processes it starts,
// so such a key is set both ways.
var CodeConfigs = []Tag{
	{Name: "node-gyp", Reason: "the node-gyp script @npmcli/run-script runs when an install script calls node-gyp",
		Module: "@npmcli/run-script/lib/make-spawn-args.js", Needle: "env.npm_config_node_gyp"},
}

// LocationEnv are the environment variables from which @npmcli/config
// derives where its config files are: not configs, read by name.
var LocationEnv = []Tag{
	{Name: "HOME", Reason: "the user config file is $HOME/.npmrc",
		Module: "@npmcli/config/lib/index.js", Needle: "this.home = this.env.HOME"},
	{Name: "PREFIX", Reason: "the global prefix, and so the global config file <prefix>/etc/npmrc",
		Module: "@npmcli/config/lib/index.js", Needle: "this.globalPrefix = this.env.PREFIX"},
	{Name: "DESTDIR", Reason: "prepended to the global prefix, and so to the global config file",
		Module: "@npmcli/config/lib/index.js", Needle: "this.globalPrefix = join(this.env.DESTDIR, this.globalPrefix)"},
}

// needles are the {module, needle} pairs dump.js checks.
func needles() []map[string]string {
	var out []map[string]string
	for _, list := range [][]Tag{CodeConfigs, LocationEnv} {
		for _, t := range list {
			out = append(out, map[string]string{"module": t.Module, "needle": t.Needle})
		}
	}
	return out
}

// checkTags fails when a hand tag no longer matches the pinned npm.
func checkTags(t *Tables) error {
	byName := map[string]Config{}
	for _, c := range t.Configs {
		byName[c.Name] = c
	}
	for _, tag := range CommandConfigs {
		c, ok := byName[tag.Name]
		if !ok || !(c.StringOnly || c.HasString) {
			return fmt.Errorf("npmgen: command config %q is no longer a String config of npm %s; review CommandConfigs", tag.Name, t.NPMVersion)
		}
	}
	for _, tag := range CodeConfigs {
		if _, ok := byName[tag.Name]; ok {
			return fmt.Errorf("npmgen: %q is now a config definition of npm %s; move it out of CodeConfigs", tag.Name, t.NPMVersion)
		}
	}
	found := map[[2]string]bool{}
	for _, s := range t.Sources {
		found[[2]string{s.Module, s.Needle}] = s.Found
	}
	for _, list := range [][]Tag{CodeConfigs, LocationEnv} {
		for _, tag := range list {
			if !found[[2]string{tag.Module, tag.Needle}] {
				return fmt.Errorf("npmgen: %s of npm %s no longer contains %q (tag %q); review the tag", tag.Module, t.NPMVersion, tag.Needle, tag.Name)
			}
		}
	}
	return nil
}

// Dump runs dump.js with node against the npm package in npmDir.
func Dump(npmDir string) (*Tables, error) {
	arg, err := json.Marshal(needles())
	if err != nil {
		return nil, fmt.Errorf("npmgen: encode needles: %w", err)
	}
	cmd := exec.Command("node", "-", npmDir, string(arg))
	cmd.Stdin = strings.NewReader(dumpScript)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("npmgen: run dump.js on %s: %w: %s", npmDir, err, strings.TrimSpace(stderr.String()))
	}
	var t Tables
	if err := json.Unmarshal(stdout.Bytes(), &t); err != nil {
		return nil, fmt.Errorf("npmgen: decode dump.js output: %w", err)
	}
	if t.NPMVersion == "" || len(t.Configs) == 0 || len(t.Shorthands) == 0 || len(t.Abbrevs) == 0 {
		return nil, fmt.Errorf("npmgen: dump.js reported empty tables for %s", npmDir)
	}
	if err := checkTags(&t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Generate returns the gofmt-ed source of npm_options.go for the npm package
// in npmDir.
func Generate(npmDir string) ([]byte, error) {
	t, err := Dump(npmDir)
	if err != nil {
		return nil, err
	}
	return Render(t)
}

// BooleanArgs returns, in DeerFlow's _NPM_BOOLEAN_ARGS notation, the options
// that never take the next token as their value: "--<name>" for every config
// whose type is Boolean or lists Boolean (the rule bin/npx-cli.js uses for
// its switches), and "-<short>" for every shorthand that expands to such a
// config, to its "--no-" form, or to a complete option and value (-d is
// "--loglevel info").
func BooleanArgs(t *Tables) []string {
	boolean := map[string]bool{}
	var out []string
	for _, c := range t.Configs {
		if c.Boolean {
			boolean[c.Name] = true
			out = append(out, "--"+c.Name)
		}
	}
	for short, exp := range t.Shorthands {
		if len(exp) == 0 {
			continue
		}
		last := exp[len(exp)-1]
		complete := false
		switch {
		case len(exp) >= 2 && !strings.HasPrefix(last, "-"):
			complete = true
		case strings.HasPrefix(last, "--no-"):
			complete = true
		case strings.HasPrefix(last, "--") && boolean[strings.TrimPrefix(last, "--")]:
			complete = true
		}
		if complete {
			out = append(out, "-"+short)
		}
	}
	sort.Strings(out)
	return out
}

// DeerFlowBooleanArgs is DeerFlow's _NPM_BOOLEAN_ARGS, verbatim: DeerFlow's
// source says it was taken from npm 10.9.4. It is kept only to compare: the generated file lists
// the differences, and a test fails when they change.
const DeerFlowBooleanArgs = `--all --allow-same-version --audit --bin-links --commit-hooks --description --dev
--diff-ignore-all-space --diff-name-only --diff-no-prefix --diff-text --dry-run
--engine-strict --expect-results --force --foreground-scripts --format-package-lock
--fund --git-tag-version --global --global-style --if-present --ignore-scripts
--include-staged --include-workspace-root --install-links --json --legacy-bundling
--legacy-peer-deps --link --long --offline --omit-lockfile-registry-resolved
--optional --package-lock --package-lock-only --parseable --prefer-dedupe
--prefer-offline --prefer-online --production --progress --provenance --read-only
--rebuild-bundle --save --save-bundle --save-dev --save-exact --save-optional
--save-peer --save-prod --shrinkwrap --sign-git-commit --sign-git-tag
--strict-peer-deps --strict-ssl --timing --unicode --update-notifier --usage
--version --versions --workspaces --workspaces-update --yes
-? -B -D -E -H -O -P -S -a -d -dd -ddd -desc -f -g -h -help -iwr -l -local -n -no
-porcelain -q -quiet -readonly -s -silent -v -verbose -ws -y`

// CompareWithDeerFlow returns the flags only the generated list has and the
// flags only DeerFlow's has, each sorted.
func CompareWithDeerFlow(generated []string) (onlyGenerated, onlyDeerFlow []string) {
	deer := map[string]bool{}
	for _, f := range strings.Fields(DeerFlowBooleanArgs) {
		deer[f] = true
	}
	gen := map[string]bool{}
	for _, f := range generated {
		gen[f] = true
		if !deer[f] {
			onlyGenerated = append(onlyGenerated, f)
		}
	}
	for f := range deer {
		if !gen[f] {
			onlyDeerFlow = append(onlyDeerFlow, f)
		}
	}
	sort.Strings(onlyGenerated)
	sort.Strings(onlyDeerFlow)
	return onlyGenerated, onlyDeerFlow
}

// Render writes the Go source for t.
func Render(t *Tables) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	q := strconv.Quote

	p("// Code generated by go generate (internal/launchpolicy/internal/npmgen, dump.js) from npm %s; DO NOT EDIT.\n\n", t.NPMVersion)
	p("package launchpolicy\n\n")
	p("// The tables below are read from the code of npm %s (nopt %s): the config\n", t.NPMVersion, t.NoptVersion)
	p("// definitions and shorthands of @npmcli/config, the abbreviations nopt's\n")
	p("// abbrev module derives from them, and the sets bin/npx-cli.js builds.\n")
	p("// Regenerate with `go generate ./internal/launchpolicy/` after changing the npm\n")
	p("// pinned in testdata/npm.\n\n")

	p("// npmVersion is the npm these tables come from.\n")
	p("const npmVersion = %s\n\n", q(t.NPMVersion))
	p("// noptVersion is the option parser that npm bundles.\n")
	p("const noptVersion = %s\n\n", q(t.NoptVersion))

	p("// npmConfig reports how nopt sees the type of config key, and whether npm\n")
	p("// defines it.\n")
	p("func npmConfig(key string) (npmType, bool) {\n\tswitch key {\n")
	for _, c := range t.Configs {
		var f []string
		add := func(on bool, name string) {
			if on {
				f = append(f, name+": true")
			}
		}
		add(c.TypeArray, "typeArray")
		add(c.Boolean, "boolean")
		add(c.StringOnly, "stringOnly")
		add(c.HasString, "hasString")
		add(c.HasNumber, "hasNumber")
		add(c.NullOnly, "nullOnly")
		add(c.HasNull, "hasNull")
		if len(c.Literals) > 0 {
			lits := make([]string, len(c.Literals))
			for i, l := range c.Literals {
				lits[i] = q(l)
			}
			f = append(f, "literals: []string{"+strings.Join(lits, ", ")+"}")
		}
		p("\tcase %s:\n\t\treturn npmType{%s}, true\n", q(c.Name), strings.Join(f, ", "))
	}
	p("\t}\n\treturn npmType{}, false\n}\n\n")

	p("// npmShorthand returns what nopt and npx-cli.js expand shorthand key to, or\n")
	p("// nil.\n")
	p("func npmShorthand(key string) []string {\n\tswitch key {\n")
	for _, k := range sortedKeys(t.Shorthands) {
		exp := t.Shorthands[k]
		parts := make([]string, len(exp))
		for i, e := range exp {
			parts[i] = q(e)
		}
		p("\tcase %s:\n\t\treturn []string{%s}\n", q(k), strings.Join(parts, ", "))
	}
	p("\t}\n\treturn nil\n}\n\n")

	writeStringMap(&b, "npmAbbrev", "the config name that abbrev maps s to (s itself for a\n// full name), or \"\"", t.Abbrevs)
	writeStringMap(&b, "npmShortAbbrev", "the shorthand name that abbrev maps s to, or \"\"", t.ShortAbbrevs)

	writeSet(&b, "npxSwitch", "whether bin/npx-cli.js treats key as an option without a value", t.NPX.Switches)
	writeSet(&b, "npxValueOption", "whether bin/npx-cli.js always takes the next token as key's value", t.NPX.Opts)
	removed := append(append([]string{}, t.NPX.RemovedSwitches...), t.NPX.RemovedOpts...)
	sort.Strings(removed)
	writeSet(&b, "npxRemoved", "whether bin/npx-cli.js drops key (an option removed in npm 7)", removed)

	var paths []string
	for _, c := range t.Configs {
		if c.Path {
			paths = append(paths, c.Name)
		}
	}
	writeList(&b, "// npmPathConfigs are the configs whose type is nopt's path type: their value\n"+
		"// names a file or folder npm reads settings, code or packages from, or\n// writes to.\n", "npmPathConfigs", paths, nil)
	writeTags(&b, "npmCommandConfigs", "the String configs whose value npm runs as a program or\n// hands to node as code (npmgen.CommandConfigs)", CommandConfigs)
	writeTags(&b, "npmCodeConfigs", "the keys npm's code reads that no config definition declares\n// (npmgen.CodeConfigs)", CodeConfigs)
	writeTags(&b, "npmLocationEnv", "the environment variables from which npm derives where its\n// config files are (npmgen.LocationEnv)", LocationEnv)

	args := BooleanArgs(t)
	onlyGen, onlyDeer := CompareWithDeerFlow(args)
	none := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, " ")
	}
	writeList(&b, "// npmBooleanArgs returns, in DeerFlow's _NPM_BOOLEAN_ARGS notation, the npm\n"+
		"// options that never take the next token as a value (see\n"+
		"// npmgen.BooleanArgs).\n//\n"+
		"// Compared with DeerFlow's _NPM_BOOLEAN_ARGS: only here: "+none(onlyGen)+"; only in\n"+
		"// DeerFlow's: "+none(onlyDeer)+". (--browser and --color list Boolean among other types,\n"+
		"// which is what makes bin/npx-cli.js treat an option as a switch; -p is\n"+
		"// npm's --parseable, which DeerFlow leaves out of this table and npx\n"+
		"// rewrites to --package.)\n", "npmBooleanArgs", args, nil)
	writeSet(&b, "npmBooleanArg", "whether flag is one of npmBooleanArgs", args)

	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("npmgen: format generated source: %w", err)
	}
	return out, nil
}

// writeTags writes a list function of the tagged names, each with its
// reason.
func writeTags(b *bytes.Buffer, name, doc string, tags []Tag) {
	names := make([]string, len(tags))
	notes := make([]string, len(tags))
	for i, t := range tags {
		names[i], notes[i] = t.Name, t.Reason
	}
	writeList(b, fmt.Sprintf("// %s returns %s.\n", name, doc), name, names, notes)
}

// writeList writes doc and a function name returning items, each followed
// by the comment notes[i] when notes is given.
func writeList(b *bytes.Buffer, doc, name string, items, notes []string) {
	b.WriteString(doc)
	fmt.Fprintf(b, "func %s() []string {\n\treturn []string{\n", name)
	for i, item := range items {
		fmt.Fprintf(b, "\t\t%s,", strconv.Quote(item))
		if notes != nil {
			fmt.Fprintf(b, " // %s", notes[i])
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(b, "\t}\n}\n\n")
}

func writeStringMap(b *bytes.Buffer, name, doc string, m map[string]string) {
	fmt.Fprintf(b, "// %s returns %s.\n", name, doc)
	fmt.Fprintf(b, "func %s(s string) string {\n\tswitch s {\n", name)
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(b, "\tcase %s:\n\t\treturn %s\n", strconv.Quote(k), strconv.Quote(m[k]))
	}
	fmt.Fprintf(b, "\t}\n\treturn \"\"\n}\n\n")
}

func writeSet(b *bytes.Buffer, name, doc string, keys []string) {
	sorted := append([]string{}, keys...)
	sort.Strings(sorted)
	quoted := make([]string, len(sorted))
	for i, k := range sorted {
		quoted[i] = strconv.Quote(k)
	}
	fmt.Fprintf(b, "// %s reports %s.\n", name, doc)
	fmt.Fprintf(b, "func %s(key string) bool {\n\tswitch key {\n\tcase %s:\n\t\treturn true\n\t}\n\treturn false\n}\n\n",
		name, strings.Join(quoted, ",\n\t\t"))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
