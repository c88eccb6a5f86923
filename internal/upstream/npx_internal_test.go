package upstream

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

// The npm prefix of npx children is below the null device: it cannot exist
// and nobody, root included, can create it. Without a null device the
// prefix is a fresh private folder.
func TestNullPrefix(t *testing.T) {
	p, err := nullPrefix(os.DevNull, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(os.DevNull, npxPrefixName) {
		t.Fatalf("prefix %q", p)
	}
	if err := os.MkdirAll(filepath.Join(p, "bin"), 0o700); err == nil {
		t.Fatalf("created %s/bin below the null device", p)
	}
	if _, err := os.Stat(filepath.Join(p, "bin")); err == nil {
		t.Fatalf("%s/bin exists", p)
	}

	tmp := t.TempDir()
	notDev := filepath.Join(tmp, "null")
	if err := os.WriteFile(notDev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err = nullPrefix(notDev, tmp)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p) != tmp || !strings.HasPrefix(filepath.Base(p), npxPrefixName+"-") {
		t.Fatalf("fallback prefix %q, want a fresh folder in %s", p, tmp)
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("fallback prefix: %v, %v", fi, err)
	}
	if entries, _ := os.ReadDir(p); len(entries) != 0 {
		t.Fatalf("fallback prefix is not empty: %v", entries)
	}
	if p2, _ := nullPrefix(notDev, tmp); p2 == p {
		t.Fatal("the fallback reused a folder")
	}
}

// fakeNpx makes a folder with an `npx` and an `npm` that answers
// `npm config get globalconfig` with answer (or fails when answer is ""),
// recording its environment and folder in the returned file.
func fakeNpx(t *testing.T, answer string) (npx, record string) {
	t.Helper()
	dir := t.TempDir()
	record = filepath.Join(dir, "npm-ran")
	script := fmt.Sprintf("#!/bin/sh\n{ env; echo \"cwd=$(pwd)\"; echo \"args=$*\"; } > %s\n", record)
	if answer == "" {
		script += "exit 1\n"
	} else {
		script += "echo " + answer + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	npx = filepath.Join(dir, "npx")
	if err := os.WriteFile(npx, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return npx, record
}

func testConn(logs *bytes.Buffer) *Conn {
	return &Conn{server: &config.Server{Name: "s"}, log: slog.New(slog.NewTextHandler(logs, nil))}
}

// envValues returns the values env gives key (exact name), in order.
func envValues(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			out = append(out, v)
		}
	}
	return out
}

// The env of an npx child gets the null prefix and the global config file
// npm names, unless the server's env sets them; other commands are left
// alone.
func TestNpxChildEnv(t *testing.T) {
	prefix, err := npxPrefix()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", "/home/antler-test")
	t.Setenv("SHELL", "/bin/sh")
	npx, record := fakeNpx(t, "/opt/node/etc/npmrc")
	dir := filepath.Dir(npx)
	for _, tc := range []struct {
		name       string
		command    string
		env        []string
		prefix     []string // values of npm_config_prefix in the child's env
		global     []string // values of npm_config_globalconfig
		otherNames []string // other names that must not be added
	}{
		{"npx", npx, []string{"API_TOKEN=secret-value"}, []string{prefix}, []string{"/opt/node/etc/npmrc"}, nil},
		{"operator prefix", npx, []string{"npm_config_prefix=/opt/p"}, []string{"/opt/p"}, nil, nil},
		{"operator prefix, any case", npx, []string{"NPM_CONFIG_PREFIX=/opt/p"}, nil, nil, []string{"NPM_CONFIG_PREFIX=/opt/p"}},
		{"empty operator prefix is no prefix", npx, []string{"npm_config_prefix="}, []string{"", prefix}, []string{"/opt/node/etc/npmrc"}, nil},
		{"operator globalconfig", npx, []string{"Npm_Config_GlobalConfig=/etc/npmrc"}, []string{prefix}, nil, nil},
		{"not npx: uvx", filepath.Join(dir, "uvx"), nil, nil, nil, nil},
		{"not npx: npx-foo", filepath.Join(dir, "npx-foo"), nil, nil, nil, nil},
		{"not npx: npx.cmd", filepath.Join(dir, "npx.cmd"), nil, nil, nil, nil},
		{"not npx: sh", "sh", []string{"X=1"}, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			cmd, err := testConn(&logs).command(context.Background(), tc.command, tc.env, []string{"-y", "pkg"})
			if err != nil {
				t.Fatal(err)
			}
			if got := envValues(cmd.Env, "npm_config_prefix"); !slices.Equal(got, tc.prefix) {
				t.Errorf("npm_config_prefix values %q, want %q (env %q)", got, tc.prefix, cmd.Env)
			}
			if got := envValues(cmd.Env, "npm_config_globalconfig"); !slices.Equal(got, tc.global) {
				t.Errorf("npm_config_globalconfig values %q, want %q", got, tc.global)
			}
			for _, kv := range tc.otherNames {
				if n := strings.Count(strings.Join(cmd.Env, "\n")+"\n", kv+"\n"); n != 1 {
					t.Errorf("%q appears %d times in %q", kv, n, cmd.Env)
				}
			}
			if logs.Len() != 0 {
				t.Errorf("unexpected log: %s", logs.String())
			}
		})
	}

	// npm was asked in /, with only HOME, PATH and npm_config_* variables,
	// no log file and no update check.
	rec, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	got := string(rec)
	for _, want := range []string{"cwd=/\n", "args=config get globalconfig\n", "HOME=/home/antler-test\n", "npm_config_logs_max=0\n", "npm_config_update_notifier=false\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("npm's environment lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"SHELL=", "API_TOKEN", "npm_config_prefix=/"} {
		if strings.Contains(got, bad) {
			t.Errorf("npm's environment has %q:\n%s", bad, got)
		}
	}

	// An npm that cannot answer: the prefix is still set, and a warning
	// says the global config file will not be read.
	failing, _ := fakeNpx(t, "")
	var logs bytes.Buffer
	cmd, err := testConn(&logs).command(context.Background(), failing, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := envValues(cmd.Env, "npm_config_prefix"); !slices.Equal(got, []string{prefix}) {
		t.Errorf("npm failing: npm_config_prefix %q", got)
	}
	if got := envValues(cmd.Env, "npm_config_globalconfig"); got != nil {
		t.Errorf("npm failing: npm_config_globalconfig %q", got)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "npm_config_globalconfig") {
		t.Errorf("npm failing: no warning: %s", logs.String())
	}
}

// Under the env built for an npx child, the real npm reads the null prefix
// (so its global bin folder is empty) and still reads the global config file
// it would have read without it.
func TestNpxChildEnvWithRealNpm(t *testing.T) {
	npx := requireNpx(t)
	prefix, err := npxPrefix()
	if err != nil {
		t.Fatal(err)
	}
	npmGet := func(env []string, key string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(filepath.Dir(npx), "npm"), "config", "get", key)
		cmd.Env = append(env, "npm_config_logs_max=0", "npm_config_update_notifier=false")
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("npm config get %s: %v", key, err)
		}
		return strings.TrimSpace(string(out))
	}
	var logs bytes.Buffer
	cmd, err := testConn(&logs).command(context.Background(), "npx", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Path != npx {
		t.Fatalf("npx resolves to %s, want %s", cmd.Path, npx)
	}
	if len(envValues(cmd.Env, "npm_config_globalconfig")) != 1 {
		t.Fatalf("no npm_config_globalconfig in %q (log: %s)", cmd.Env, logs.String())
	}
	var base []string // the env without the two additions
	for _, kv := range cmd.Env {
		if !strings.HasPrefix(kv, "npm_config_prefix=") && !strings.HasPrefix(kv, "npm_config_globalconfig=") {
			base = append(base, kv)
		}
	}
	if got := npmGet(cmd.Env, "prefix"); got != prefix {
		t.Errorf("npm's prefix in the child env: %q, want %q", got, prefix)
	}
	want := npmGet(base, "globalconfig")
	if got := npmGet(cmd.Env, "globalconfig"); got != want {
		t.Errorf("npm's globalconfig in the child env: %q, without the prefix: %q", got, want)
	}
	if got := npmGet(base, "prefix"); got == prefix {
		t.Errorf("npm's own prefix is already %q", got)
	}
	t.Logf("npm %s: prefix %s (was %s), globalconfig %s", npmGet(base, "npm-version"), prefix, npmGet(base, "prefix"), want)
}

// requireNpx returns the absolute path of the npx on PATH. Without node or
// npx the test is skipped, except under CI=true, where it fails.
func requireNpx(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"node", "npx", "npm"} {
		if _, err := exec.LookPath(name); err != nil {
			msg := fmt.Sprintf("%s is not on PATH (install Node.js 20+)", name)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	p, _ := exec.LookPath("npx")
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// fakeLauncher makes a folder with an executable named name that records
// its arguments, working directory and environment in the returned file.
func fakeLauncher(t *testing.T, name string) (path, record string) {
	t.Helper()
	dir := t.TempDir()
	record = filepath.Join(dir, "ran")
	script := fmt.Sprintf("#!/bin/sh\n{ echo \"cwd=$(pwd)\"; for a in \"$@\"; do echo \"arg=$a\"; done; env; } > %s\n", record)
	path = filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if name == "npx" { // npxEnv asks the npm beside it for the global config
		if err := os.WriteFile(filepath.Join(dir, "npm"), []byte("#!/bin/sh\necho /etc/npmrc\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return path, record
}

// The child a workspace launch runs, recorded by a fake launcher found on
// PATH: every command gets PYTHONSAFEPATH, npx and npm get the local prefix
// first and the script shell, uvx and uv get UV_NO_CONFIG and UV_NO_PROJECT;
// each yields to the operator's setting; outside a host-chosen workspace
// nothing is added.
// The working directory stays the workspace.
func TestConfinedLauncherEnv(t *testing.T) {
	prefix, err := npxLocalPrefix()
	if err != nil {
		t.Fatal(err)
	}
	shell, err := npxScriptShell()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		launcher  string
		env       []string
		noConfine bool
		want      []string // lines the record must have
		unwanted  []string // line prefixes it must not have
	}{
		{"npx", "npx", nil, false,
			[]string{"arg=--prefix=" + prefix, "arg=-y", "arg=pkg", "npm_config_script_shell=" + shell, "PYTHONSAFEPATH=1"}, nil},
		{"npx, operator script shell", "npx", []string{"NPM_CONFIG_SCRIPT_SHELL=/bin/bash"}, false,
			[]string{"arg=--prefix=" + prefix, "NPM_CONFIG_SCRIPT_SHELL=/bin/bash"}, []string{"npm_config_script_shell="}},
		{"npx, not confined", "npx", nil, true,
			[]string{"arg=-y"}, []string{"arg=--prefix", "npm_config_script_shell=", "PYTHONSAFEPATH="}},
		{"uvx", "uvx", nil, false,
			[]string{"UV_NO_CONFIG=1", "UV_NO_PROJECT=1", "PYTHONSAFEPATH=1", "arg=-y"}, []string{"arg=--prefix"}},
		{"npm", "npm", nil, false, []string{"arg=--prefix=" + prefix, "arg=-y", "npm_config_script_shell=" + shell}, nil},
		{"uv", "uv", nil, false, []string{"UV_NO_CONFIG=1", "UV_NO_PROJECT=1", "PYTHONSAFEPATH=1", "arg=-y", "arg=pkg"}, []string{"arg=--prefix"}},
		{"uv, operator project", "uv", []string{"UV_PROJECT=/srv/tool", "UV_NO_CONFIG=0", "PYTHONSAFEPATH=0"}, false,
			[]string{"UV_PROJECT=/srv/tool", "UV_NO_CONFIG=0", "PYTHONSAFEPATH=0"}, []string{"UV_NO_PROJECT=", "UV_NO_CONFIG=1", "PYTHONSAFEPATH=1"}},
		{"uv, not confined", "uv", nil, true, []string{"arg=pkg"}, []string{"UV_NO_CONFIG=", "UV_NO_PROJECT=", "PYTHONSAFEPATH="}},
		{"uvx, operator config file", "uvx", []string{"UV_CONFIG_FILE=/etc/antler/uv.toml", "PYTHONSAFEPATH="}, false,
			[]string{"UV_CONFIG_FILE=/etc/antler/uv.toml", "PYTHONSAFEPATH="}, []string{"UV_NO_CONFIG=", "PYTHONSAFEPATH=1"}},
		{"uvx, operator UV_NO_CONFIG", "uvx", []string{"UV_NO_CONFIG=0"}, false,
			[]string{"UV_NO_CONFIG=0", "PYTHONSAFEPATH=1"}, []string{"UV_NO_CONFIG=1"}},
		{"uvx, not confined", "uvx", nil, true, []string{"arg=pkg"}, []string{"UV_NO_CONFIG=", "UV_NO_PROJECT=", "PYTHONSAFEPATH="}},
		{"relative PATH entries", "node", []string{"PATH=.::bin:/usr/bin:/bin"}, false, []string{"PATH=/usr/bin:/bin"}, []string{"PATH=."}},
		{"relative PATH entries, not confined", "node", []string{"PATH=.::bin:/usr/bin:/bin"}, true, []string{"PATH=.::bin:/usr/bin:/bin"}, nil},
		{"other command", "node", nil, false, []string{"arg=pkg", "PYTHONSAFEPATH=1"}, []string{"UV_NO_CONFIG=", "UV_NO_PROJECT=", "arg=--prefix", "npm_config_script_shell="}},
		{"other command, operator PYTHONSAFEPATH", "python3", []string{"PYTHONSAFEPATH="}, false, []string{"PYTHONSAFEPATH="}, []string{"PYTHONSAFEPATH=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			launcher, record := fakeLauncher(t, tc.launcher)
			t.Setenv("PATH", filepath.Dir(launcher)+string(os.PathListSeparator)+os.Getenv("PATH"))
			ws := t.TempDir()
			var logs bytes.Buffer
			c := testConn(&logs)
			c.server = &config.Server{Name: "s", Cwd: ws}
			if !tc.noConfine {
				c.workspace = ws
			}
			cmd, err := c.command(context.Background(), tc.launcher, tc.env, []string{"-y", "pkg"})
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = nil
			if err := cmd.Run(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(b), "\n")
			for _, w := range append([]string{"cwd=" + ws}, tc.want...) {
				if !slices.Contains(lines, w) {
					t.Errorf("the child lacks %q:\n%s", w, b)
				}
			}
			for _, u := range tc.unwanted {
				for _, l := range lines {
					if strings.HasPrefix(l, u) {
						t.Errorf("the child has %q:\n%s", l, b)
					}
				}
			}
		})
	}
}

// The script shell cuts exactly the run of node_modules/.bin folders npm
// puts on PATH for the working directory and its parents, keeps a bin folder
// npm found for the package (even one under /), drops relative and empty
// entries, and runs the command with /bin/sh.
func TestNpxScriptShellCleansPath(t *testing.T) {
	shell, err := npxScriptShell()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	var walk []string
	for d := real; ; d = filepath.Dir(d) {
		walk = append(walk, filepath.Join(d, "node_modules", ".bin"))
		if d == "/" {
			break
		}
	}
	join := func(parts ...[]string) string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return strings.Join(all, ":")
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"npm's PATH", join([]string{"/cache/_npx/1/node_modules/.bin"}, walk, []string{"/gyp", "/usr/bin", "/bin"}),
			"/cache/_npx/1/node_modules/.bin:/gyp:/usr/bin:/bin"},
		{"a bin folder under / found for the package", join([]string{"/node_modules/.bin"}, walk, []string{"/usr/bin:/bin"}),
			"/node_modules/.bin:/usr/bin:/bin"},
		{"relative and empty entries", join(walk, []string{".", "", "bin", "/usr/bin", "/bin"}), "/usr/bin:/bin"},
		{"no walk", "/usr/bin:/bin", "/usr/bin:/bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(shell, "-c", `printf %s "$PATH"`)
			cmd.Dir = ws
			cmd.Env = []string{"PATH=" + tc.path}
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("PATH\n%s\nbecame\n%s\nwant\n%s", tc.path, out, tc.want)
			}
		})
	}
}

// hostPaths rewrites, against the host's working directory, a relative
// command with a slash and each relative argument naming an existing file
// there; flags, `--flag=value`, folders, absolute paths and names missing
// from the host's folder stay as written.
func TestRelativeArgsResolvedOnHost(t *testing.T) {
	host := t.TempDir()
	for _, f := range []string{"server.js", "sub/s.py"} {
		p := filepath.Join(host, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(host, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(host)
	for _, tc := range []struct {
		name, command string
		args          []string
		wantPath      string
		wantArgs      []string
	}{
		{"script argument", "node", []string{"server.js", "--port", "1"}, "",
			[]string{"node", filepath.Join(host, "server.js"), "--port", "1"}},
		{"nested and dotted", "python3", []string{"./sub/s.py", "sub/../server.js"}, "",
			[]string{"python3", filepath.Join(host, "sub", "s.py"), filepath.Join(host, "server.js")}},
		{"left alone", "node", []string{"-e", "--x=server.js", ".", "data", "missing.js", "/abs/server.js", ""}, "",
			[]string{"node", "-e", "--x=server.js", ".", "data", "missing.js", "/abs/server.js", ""}},
		{"relative command", "./bin/server", []string{"server.js"}, filepath.Join(host, "bin", "server"),
			[]string{"./bin/server", filepath.Join(host, "server.js")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(tc.command, tc.args...)
			if err := hostPaths(cmd); err != nil {
				t.Fatal(err)
			}
			if tc.wantPath != "" && cmd.Path != tc.wantPath {
				t.Errorf("path %q, want %q", cmd.Path, tc.wantPath)
			}
			if !slices.Equal(cmd.Args, tc.wantArgs) {
				t.Errorf("args %q, want %q", cmd.Args, tc.wantArgs)
			}
		})
	}
}

func TestPythonScript(t *testing.T) {
	for _, tc := range []struct {
		command string
		args    []string
		want    bool
	}{
		{"python3", []string{"/srv/server.py"}, true},
		{"/usr/bin/python3.11", []string{"-u", "-B", "server.py", "-m", "x"}, true},
		{"python", []string{"--", "server.py"}, false},
		{"python3", []string{"-m", "mcp_server_time"}, false},
		{"python3", []string{"-um", "mcp_server_time"}, false},
		{"python3", []string{"-c", "import x"}, false},
		{"python3", []string{"-W", "ignore", "server.py"}, false},
		{"python3", nil, false},
		{"python3", []string{"-"}, false},
		{"node", []string{"server.js"}, false},
		{"pythonista", []string{"server.py"}, false},
		{"uvx", []string{"mcp-server-time"}, false},
	} {
		if got := pythonScript(tc.command, tc.args); got != tc.want {
			t.Errorf("pythonScript(%q, %q) = %v, want %v", tc.command, tc.args, got, tc.want)
		}
	}
}
