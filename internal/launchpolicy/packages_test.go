package launchpolicy

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostPrograms is the PATH the package tests pretend the host has, so that
// they do not depend on the machine's.
func hostPrograms(file string) (string, error) {
	switch file {
	case "id", "sh", "bash", "curl", "python3", "node", "touch":
		return "/usr/bin/" + file, nil
	}
	return "", exec.ErrNotFound
}

// testPolicy is New(extra...) with the fake PATH.
func testPolicy(extra ...string) *Policy {
	p := New(extra...)
	p.LookPath = hostPrograms
	return p
}

// TestLauncherPackage: npx and uvx pointed at a package that runs commands
// (npm exec -c, node -e, python -c), at a URL, git or archive spec, or, with
// --package / --from, at a command the host has, are refused, naming the
// package only; MCP server packages still pass.
func TestLauncherPackage(t *testing.T) {
	p := testPolicy()
	for _, tc := range []struct {
		name    string
		command string
		args    []string
		why     packageWhy // 0: accepted
		pkg     string
	}{
		{"npx npm exec -c", "npx", []string{"-y", "npm", "exec", "-c", "id > /tmp/x"}, runnerPkg, "npm"},
		{"npx npm exec --call=", "npx", []string{"-y", "npm", "exec", "--call=id"}, runnerPkg, "npm"},
		{"npx -p npm@ver npx -c", "npx", []string{"-y", "-p", "npm@10.9.4", "npx", "-c", "id"}, runnerPkg, "npm"},
		{"npx --package=npm -- npm", "npx", []string{"-y", "--package=npm", "--", "npm", "exec", "-c", "id"}, runnerPkg, "npm"},
		{"npx alias x@npm:npm", "npx", []string{"-y", "x@npm:npm@10.9.4", "exec", "-c", "id"}, runnerPkg, "npm"},
		{"npx alias npm:npm", "npx", []string{"-y", "npm:npm", "exec", "-c", "id"}, runnerPkg, "npm"},
		{"npx node@20 -e", "npx", []string{"-y", "node@20", "-e", "require('child_process').execSync('id')"}, runnerPkg, "node"},
		{"npx NPM upper case", "npx", []string{"-y", "NPM@latest", "exec", "-c", "id"}, runnerPkg, "NPM"},
		{"npx tsx", "npx", []string{"-y", "tsx", "-e", "1"}, runnerPkg, "tsx"},
		{"npx cross-env", "npx", []string{"-y", "cross-env", "A=1", "sh", "-c", "id"}, runnerPkg, "cross-env"},
		{"npx zx", "npx", []string{"zx", "--eval", "await $`id`"}, runnerPkg, "zx"},
		{"npx --package=pkg --package=yarn", "npx", []string{"--package=@scope/pkg", "--package=yarn", "server-bin"}, runnerPkg, "yarn"},
		{"npx tarball URL", "npx", []string{"-y", "https://registry.npmjs.org/npm/-/npm-10.9.4.tgz", "exec", "-c", "id"}, remoteSpec, ""},
		{"npx git URL", "npx", []string{"-y", "git+https://example.invalid/npm.git", "exec", "-c", "id"}, remoteSpec, ""},
		{"npx github:", "npx", []string{"-y", "github:npm/cli", "exec", "-c", "id"}, remoteSpec, ""},
		{"npx user/repo", "npx", []string{"-y", "npm/cli", "exec", "-c", "id"}, remoteSpec, ""},
		{"npx scp git", "npx", []string{"-y", "git@github.com:npm/cli.git"}, remoteSpec, ""},
		{"npx name@URL", "npx", []string{"-y", "x@github:npm/cli", "exec", "-c", "id"}, remoteSpec, ""},
		{"npx --package=URL", "npx", []string{"--package=https://example.invalid/p.tgz", "server-bin"}, remoteSpec, ""},
		{"npx --package command on PATH", "npx", []string{"-y", "--package=@scope/pkg", "id"}, hostCommand, "id"},
		{"npx -p command on PATH", "npx", []string{"-p", "@scope/pkg", "bash"}, hostCommand, "bash"},
		{"npx -p eval", "npx", []string{"-p", "@scope/pkg", "eval", "id"}, hostCommand, "eval"},
		{"npx -p command", "npx", []string{"-p", "@scope/pkg", "command", "id"}, hostCommand, "command"},
		{"npx -p trap", "npx", []string{"--package", "@scope/pkg", "trap", "id", "EXIT"}, hostCommand, "trap"},
		{"npx -p command a runner", "npx", []string{"-p", "@scope/pkg", "npm", "exec", "-c", "id"}, hostCommand, "npm"},
		{"uvx python -c", "uvx", []string{"python", "-c", "import os; os.system('id')"}, runnerPkg, "python"},
		{"uvx python@3.12", "uvx", []string{"python@3.12", "-c", "1"}, runnerPkg, "python"},
		{"uvx python3.12", "uvx", []string{"python3.12", "-c", "1"}, runnerPkg, "python3.12"},
		{"uvx pip", "uvx", []string{"pip", "install", "x"}, runnerPkg, "pip"},
		{"uvx ipython", "uvx", []string{"--python", "3.12", "ipython"}, runnerPkg, "ipython"},
		{"uvx --from uv", "uvx", []string{"--from", "uv==0.11.1", "uv", "run", "x"}, runnerPkg, "uv"},
		{"uvx --with ipython", "uvx", []string{"--with", "rich,IPython", "mcp-server-fetch"}, runnerPkg, "IPython"},
		{"uvx -wpip", "uvx", []string{"-wpip", "mcp-server-fetch"}, runnerPkg, "pip"},
		{"uvx --from URL", "uvx", []string{"--from", "git+https://example.invalid/x", "tool"}, remoteSpec, ""},
		{"uvx --with URL", "uvx", []string{"--with", "https://example.invalid/x", "mcp-server-fetch"}, remoteSpec, ""},
		{"uvx name@git", "uvx", []string{"x@git+https:example.invalid"}, remoteSpec, ""},
		{"uvx --from command on PATH", "uvx", []string{"--from", "mcp-server-fetch", "python3", "-c", "1"}, hostCommand, "python3"},
		{"uvx --from command a runner", "uvx", []string{"--from", "mcp-server-fetch", "pip"}, hostCommand, "pip"},

		{"npx MCP server", "npx", []string{"-y", "@modelcontextprotocol/server-everything"}, 0, ""},
		{"npx versioned", "npx", []string{"-y", "@modelcontextprotocol/server-github@2025.4.8"}, 0, ""},
		{"npx -p bin", "npx", []string{"-p", "@scope/pkg", "server-bin", "--port", "1"}, 0, ""},
		{"npx server's own npm argument", "npx", []string{"-y", "@scope/server", "npm", "node"}, 0, ""},
		{"npx name starting like a runner", "npx", []string{"-y", "npm-mcp-server"}, 0, ""},
		{"uvx MCP server", "uvx", []string{"mcp-server-fetch"}, 0, ""},
		{"uvx python-named package", "uvx", []string{"python-mcp-server"}, 0, ""},
		{"uvx --from", "uvx", []string{"--from", "mcp-server-git==0.6", "mcp-server-git", "--repository", "/repo"}, 0, ""},
		{"uvx extras", "uvx", []string{"--from", "mcp-server-x[cli]>=1", "mcp-server-x"}, 0, ""},
		{"uvx --with", "uvx", []string{"--with", "rich,httpx", "mcp-server-time"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Check(Launch{Server: "demo", Type: "stdio", Command: tc.command, Args: tc.args})
			if tc.why == 0 {
				if err != nil {
					t.Fatalf("%s %q: %v, want accepted", tc.command, tc.args, err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Kind != LauncherPackage || pe.why != tc.why || pe.Package != tc.pkg || pe.Command != tc.command {
				t.Fatalf("%s %q: %v (%+v), want LauncherPackage %d naming %q", tc.command, tc.args, err, pe, tc.why, tc.pkg)
			}
			for _, a := range tc.args {
				if len(a) > 3 && a != tc.pkg && strings.Contains(err.Error(), a) {
					t.Errorf("message %q shows argument %q", err.Error(), a)
				}
			}
		})
	}
}

// TestLookPathDefault: without an injected lookup the host's PATH decides.
func TestLookPathDefault(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on PATH")
	}
	err := New().Check(Launch{Server: "s", Command: "npx", Args: []string{"-p", "@scope/pkg", "sh"}})
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != LauncherPackage || pe.why != hostCommand {
		t.Fatalf("npx -p @scope/pkg sh: %v, want LauncherPackage", err)
	}
}

// TestPackageAllowlist: with ANTLER_MCP_STDIO_PACKAGE_ALLOWLIST set, every
// package npx or uvx is pointed at must be listed (by name, any version);
// unset or empty, any package passes.
func TestPackageAllowlist(t *testing.T) {
	env := func(v string, set bool) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == PackageAllowlistEnv && set {
				return v, true
			}
			return "", false
		}
	}
	listed := env(" @modelcontextprotocol/server-everything , mcp_server_fetch,,@scope/pkg", true)
	for _, tc := range []struct {
		name    string
		lookup  func(string) (string, bool)
		command string
		args    []string
		refused string // the package named; "" when accepted
	}{
		{"listed", listed, "npx", []string{"-y", "@modelcontextprotocol/server-everything"}, ""},
		{"listed, versioned", listed, "npx", []string{"-y", "@modelcontextprotocol/server-everything@2025.1.1"}, ""},
		{"listed, uvx normalised", listed, "uvx", []string{"mcp-server-fetch==1.0"}, ""},
		{"listed --package", listed, "npx", []string{"--package=@scope/pkg", "server-bin"}, ""},
		{"unlisted", listed, "npx", []string{"-y", "@modelcontextprotocol/server-github"}, "@modelcontextprotocol/server-github"},
		{"unlisted --package", listed, "npx", []string{"--package=@scope/pkg", "--package=left-pad", "server-bin"}, "left-pad"},
		{"unlisted uvx --with", listed, "uvx", []string{"--with", "requests", "mcp-server-fetch"}, "requests"},
		{"unlisted uvx --from", listed, "uvx", []string{"--from", "mcp-server-git", "mcp-server-fetch"}, "mcp-server-git"},
		{"unset", env("", false), "npx", []string{"-y", "left-pad"}, ""},
		{"empty", env(" , ", true), "npx", []string{"-y", "left-pad"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := FromEnv(tc.lookup)
			p.LookPath = hostPrograms
			err := p.Check(Launch{Server: "demo", Command: tc.command, Args: tc.args})
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("%q: %v, want accepted", tc.args, err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Kind != LauncherPackage || pe.why != unlistedPkg || pe.Package != tc.refused {
				t.Fatalf("%q: %v, want LauncherPackage naming %q", tc.args, err, tc.refused)
			}
			if !strings.Contains(err.Error(), PackageAllowlistEnv) {
				t.Errorf("message %q does not name %s", err.Error(), PackageAllowlistEnv)
			}
		})
	}
}

// TestPythonEnv: BROWSER and every PYTHON* variable but a few switches are
// refused like the other code-injecting variables.
func TestPythonEnv(t *testing.T) {
	p := testPolicy("python")
	for _, tc := range []struct {
		name string
		want Kind // 0: accepted
	}{
		{"BROWSER", EnvVar},
		{"browser", EnvVar},
		{"PYTHONWARNINGS", EnvVar},
		{"PYTHONINSPECT", EnvVar},
		{"PYTHONBREAKPOINT", EnvVar},
		{"PYTHONUSERBASE", EnvVar},
		{"PYTHONPLATLIBDIR", EnvVar},
		{"pythonwarnings=ignore::antigravity.x", EnvVar},
		{"PYTHONSAFEPATH", Confinement},
		{"PYTHONUNBUFFERED", 0},
		{"PYTHONIOENCODING", 0},
		{"PYTHONUTF8", 0},
		{"PYTHONDONTWRITEBYTECODE", 0},
		{"PYTHONHASHSEED", 0},
		{"PYTHONFAULTHANDLER", 0},
		{"PATH_PYTHON", 0},
	} {
		for _, command := range []string{"uvx", "python", "npx"} {
			args := []string{"mcp-server-fetch"}
			if command == "python" {
				args = []string{"-m", "mcp_server_fetch"}
			}
			err := p.Check(Launch{Server: "s", Command: command, Args: args, EnvNames: []string{"LANG", tc.name}})
			var pe *Error
			switch {
			case tc.want == 0 && err != nil:
				t.Errorf("%s with %s: %v, want accepted", command, tc.name, err)
			case tc.want != 0 && (!errors.As(err, &pe) || pe.Kind != tc.want || pe.EnvName != envName(tc.name)):
				t.Errorf("%s with %s: %v, want kind %d", command, tc.name, err, tc.want)
			}
		}
	}
}

// TestUvxFileOptions: every uvx option naming a file or folder uv reads is
// refused among uvx's own options, in clap's spellings, and so are the
// variables that set them; after the package they are its own arguments.
func TestUvxFileOptions(t *testing.T) {
	p := testPolicy()
	for _, tc := range []struct {
		args []string
		flag string // "": accepted
	}{
		{[]string{"--with-requirements", "/tmp/r.txt", "mcp-server-x"}, "--with-requirements"},
		{[]string{"--overrides=/tmp/o.txt", "mcp-server-x"}, "--overrides"},
		{[]string{"--override", "/tmp/o.txt", "mcp-server-x"}, "--override"},
		{[]string{"--constraints", "c.txt", "mcp-server-x"}, "--constraints"},
		{[]string{"-c", "constraints.txt", "mcp-server-fetch"}, "-c"},
		{[]string{"-cconstraints.txt", "mcp-server-fetch"}, "-c"},
		{[]string{"-qc", "c.txt", "mcp-server-fetch"}, "-c"},
		{[]string{"--build-constraints", "b.txt", "mcp-server-x"}, "--build-constraints"},
		{[]string{"-b=b.txt", "mcp-server-x"}, "-b"},
		{[]string{"--env-file", "/proc/self/environ", "mcp-server-x"}, "--env-file"},
		{[]string{"--find-links", "/tmp/wheels", "mcp-server-x"}, "--find-links"},
		{[]string{"-f", "https://example.invalid/links", "mcp-server-x"}, "-f"},
		{[]string{"--directory", "/tmp/proj", "mcp-server-x"}, "--directory"},
		{[]string{"--project=/tmp/proj", "mcp-server-x"}, "--project"},
		{[]string{"--cache-dir", "/tmp/cache", "mcp-server-x"}, "--cache-dir"},
		{[]string{"--python", "3.12", "--with-requirements=r.txt", "mcp-server-x"}, "--with-requirements"},
		{[]string{"mcp-server-x", "--env-file", "f", "-c", "x"}, ""},
		{[]string{"--python", "3.12", "mcp-server-x", "-f", "x"}, ""},
		{[]string{"-p", "3.12", "mcp-server-time"}, ""},
	} {
		err := p.Check(Launch{Server: "s", Command: "uvx", Args: tc.args})
		var pe *Error
		switch {
		case tc.flag == "" && err != nil:
			t.Errorf("%q: %v, want accepted", tc.args, err)
		case tc.flag != "" && (!errors.As(err, &pe) || pe.Kind != Confinement || pe.Flag != tc.flag):
			t.Errorf("%q: %v, want Confinement naming %s", tc.args, err, tc.flag)
		}
	}
	for _, name := range []string{"UV_OVERRIDE", "UV_CONSTRAINT", "UV_BUILD_CONSTRAINT", "UV_FIND_LINKS", "UV_ENV_FILE", "uv_project", "UV_WORKING_DIR", "UV_CACHE_DIR"} {
		err := p.Check(Launch{Server: "s", Command: "uvx", Args: []string{"mcp-server-x"}, EnvNames: []string{name}})
		var pe *Error
		if !errors.As(err, &pe) || pe.Kind != Confinement || pe.EnvName != name {
			t.Errorf("uvx with %s: %v, want Confinement", name, err)
		}
	}
	if err := p.Check(Launch{Server: "s", Command: "uvx", Args: []string{"mcp-server-x"}, EnvNames: []string{"UV_REQUIRE_HASHES", "UV_INDEX_URL"}}); err != nil {
		t.Errorf("uvx with UV_REQUIRE_HASHES: %v, want accepted", err)
	}
}

// TestInterpreterLoadArgs: an operator who allowlists node or python gets
// the options that load code before the program refused too: node's
// require/import/loader/env-file/inspector options, and python -m with a
// module that runs its arguments (or perl -M with code).
func TestInterpreterLoadArgs(t *testing.T) {
	p := testPolicy("node", "python", "perl")
	for _, tc := range []struct {
		command string
		args    []string
		flag    string // "": accepted
	}{
		{"node", []string{"--import", "data:text/javascript,1", "server.js"}, "--import"},
		{"node", []string{"--import=./x.mjs", "server.js"}, "--import"},
		{"node", []string{"-r", "/tmp/x.js", "server.js"}, "-r"},
		{"node", []string{"--require", "/tmp/x.js", "server.js"}, "--require"},
		{"node", []string{"--loader=/tmp/l.mjs", "server.js"}, "--loader"},
		{"node", []string{"--experimental-loader", "/tmp/l.mjs", "server.js"}, "--experimental-loader"},
		{"node", []string{"--experimental_loader", "/tmp/l.mjs", "server.js"}, "--experimental_loader"},
		{"node", []string{"--env-file=/tmp/env", "server.js"}, "--env-file"},
		{"node", []string{"--env-file-if-exists", "/tmp/env", "server.js"}, "--env-file-if-exists"},
		{"node", []string{"--inspect=0.0.0.0:9229", "server.js"}, "--inspect"},
		{"node", []string{"--inspect-brk", "server.js"}, "--inspect-brk"},
		{"node", []string{"-ir", "/tmp/x.js"}, "-r"},
		{"python", []string{"-m", "timeit", "__import__('os').system('id')"}, "-m"},
		{"python", []string{"-mtimeit", "1"}, "-m"},
		{"python", []string{"-Im", "timeit", "1"}, "-m"},
		{"python", []string{"-Imtimeit", "1"}, "-m"},
		{"python", []string{"-m=timeit", "1"}, "-m"},
		{"python", []string{"-m", "cProfile", "-m", "x"}, "-m"},
		{"python", []string{"-m", "profile", "x.py"}, "-m"},
		{"python", []string{"-m", "pdb", "-c", "x"}, "-m"},
		{"python", []string{"-m", "trace", "--run", "x.py"}, "-m"},
		{"python", []string{"-m", "code"}, "-m"},
		{"python", []string{"-m", "runpy", "x"}, "-m"},
		{"python", []string{"-m", "idlelib.idle"}, "-m"},
		{"python", []string{"-m", "pip", "install", "x"}, "-m"},
		{"perl", []string{"-M", "strict;system('id')", "x.pl"}, "-m"},
		{"python", []string{"-W", "ignore::antigravity.x", "-m", "srv"}, "-W"},
		{"python", []string{"-Wignore::antigravity.x", "-m", "srv"}, "-W"},
		{"python", []string{"-IW", "ignore::os.x", "-m", "srv"}, "-W"},
		{"python", []string{"-W", "ignore::DeprecationWarning", "-m", "srv"}, ""},
		{"python", []string{"-W", "ignore", "-m", "srv"}, ""},
		{"perl", []string{"-W", "x.pl"}, ""},

		{"node", []string{"server.js"}, ""},
		{"node", []string{"--max-old-space-size=512", "--enable-source-maps", "server.js"}, ""},
		{"node", []string{"--experimental-default-type=module", "server.js"}, ""},
		{"python", []string{"-m", "trusted_mcp_server"}, ""},
		{"python", []string{"-u", "-m", "mcp_server_fetch"}, ""},
		{"python", []string{"-Im", "mcp_server_time.cli"}, ""},
		{"python", []string{"server.py", "-m", "gpt-4"}, ""},
		{"perl", []string{"-Mstrict", "x.pl"}, ""},
	} {
		err := p.Check(Launch{Server: "s", Command: tc.command, Args: tc.args})
		var pe *Error
		switch {
		case tc.flag == "" && err != nil:
			t.Errorf("%s %q: %v, want accepted", tc.command, tc.args, err)
		case tc.flag != "" && (!errors.As(err, &pe) || pe.Kind != ExecArg || pe.Flag != tc.flag):
			t.Errorf("%s %q: %v, want ExecArg %s", tc.command, tc.args, err, tc.flag)
		}
	}
}

// TestRunnerAttacksForReal performs each attack unscreened with the real
// programs (the pinned npx, node, python3): each must create its canary,
// and the policy must refuse the same launch. A launch of the real MCP
// server package passes and starts.
func TestRunnerAttacksForReal(t *testing.T) {
	npmDir := pinnedNPM(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	npx := filepath.Join(npmDir, "bin", "npx-cli.js")
	servers := filepath.Join(root, "testdata", "npm")
	python, pyErr := exec.LookPath("python3")
	type attack struct {
		name    string
		command string   // as the policy sees it
		args    []string // the launch's args; "C" likewise
		env     []string // NAME=value; "C" likewise
		extra   []string // allowlist extension
		python  bool
	}
	touch := "touch C"
	cases := []attack{
		{name: "npx npm exec -c", command: "npx", args: []string{"-y", "npm", "exec", "-c", touch}},
		{name: "npx -p npm npx -c", command: "npx", args: []string{"-y", "-p", "npm", "npx", "-c", touch}},
		{name: "npx --package=npm -- npm exec -c", command: "npx", args: []string{"-y", "--package=npm", "--", "npm", "exec", "-c", touch}},
		{name: "npx -p pkg eval", command: "npx", args: []string{"-y", "-p", "@modelcontextprotocol/server-everything", "eval", touch}},
		{name: "npx -p pkg command", command: "npx", args: []string{"-y", "-p", "@modelcontextprotocol/server-everything", "command", "touch", "C"}},
		{name: "npx npm exec --call=", command: "npx", args: []string{"-y", "npm", "exec", "--call=" + touch}},
		{name: "node --import", command: "node", extra: []string{"node"},
			args: []string{"--import=data:text/javascript,import('fs').then(f=>f.writeFileSync('C',''))", "D/server.js"}},
		{name: "python -m timeit", command: "python3", extra: []string{"python3"}, python: true,
			args: []string{"-m", "timeit", "-n", "1", "open('C','w')"}},
		{name: "PYTHONWARNINGS and BROWSER", command: "python3", extra: []string{"python3"}, python: true,
			args: []string{"-m", "json.tool", "--help"},
			env:  []string{"PYTHONWARNINGS=ignore::antigravity.x", "BROWSER=/bin/sh -c 'touch C' #%s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.python && pyErr != nil {
				unavailable(t, "python3 is not on PATH")
			}
			dir := t.TempDir()
			canary := filepath.Join(dir, "canary")
			subst := func(in []string) []string {
				out := make([]string, len(in))
				for i, s := range in {
					out[i] = strings.NewReplacer("C", canary, "D", dir).Replace(s)
				}
				return out
			}
			if err := os.WriteFile(filepath.Join(dir, "server.js"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			args := subst(tc.args)
			var argv []string
			switch tc.command {
			case "npx":
				argv = append([]string{"node", npx}, args...)
			case "python3":
				argv = append([]string{python}, args...)
			default:
				argv = append([]string{tc.command}, args...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir = servers // npx finds the pinned npm in its node_modules, offline
			home := filepath.Join(dir, "home")
			if err := os.Mkdir(home, 0o700); err != nil {
				t.Fatal(err)
			}
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "npm_config_update_notifier=false", "npm_config_offline=true"}, subst(tc.env)...)
			out, runErr := cmd.CombinedOutput()
			if _, err := os.Stat(canary); err != nil {
				t.Fatalf("unscreened, %q did not create the canary (%v); the attack no longer works here, so this test proves nothing:\n%s", argv, runErr, out)
			}
			var names []string
			for _, e := range tc.env {
				names = append(names, envName(e))
			}
			err := New(tc.extra...).Check(Launch{Server: "srv", Type: "stdio", Command: tc.command, Args: args, EnvNames: names})
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("policy on %s %q env %q: %v, want refused", tc.command, args, names, err)
			}
			if strings.Contains(err.Error(), canary) {
				t.Errorf("message %q shows a value", err.Error())
			}
		})
	}
	t.Run("legitimate server", func(t *testing.T) {
		t.Parallel()
		args := []string{"-y", "@modelcontextprotocol/server-everything"}
		if err := New().Check(Launch{Server: "everything", Type: "stdio", Command: "npx", Args: args}); err != nil {
			t.Fatalf("policy on npx %q: %v, want accepted", args, err)
		}
	})
}
