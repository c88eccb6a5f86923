package upstream

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// A pooled stdio child runs in its thread's workspace, a folder other servers
// let agents write. Launchers read configuration from their working
// directory: npm takes its project (local prefix) from the first parent with
// a package.json or node_modules, reads <local prefix>/.npmrc (where
// node-options can load any file into node), runs bins of packages found
// there, and puts node_modules/.bin of the working directory and of each
// parent first on the PATH of the server it starts; uv reads uv.toml,
// pyproject.toml and .python-version from the working directory and its
// parents, and Python puts the working directory first on sys.path. A
// relative script argument (`node server.js`) names a file in it.
//
// confine keeps the working directory (a server's relative output still
// lands in the workspace) and moves everything the launcher would read from
// it to places no agent can write:
//   - every child's PATH loses its empty and relative entries;
//   - every child gets PYTHONSAFEPATH=1, so a Python (3.11 or later) anywhere
//     in the tree does not put the working directory (`-m`, `-c`) or a
//     script's folder first on sys.path, where a workspace module would
//     shadow the one the server imports;
//   - the command, when it is a relative path with a slash (`./server`), and
//     each argument that does not start with '-', is relative, and names an
//     existing file (not a folder) relative to the host's working directory
//     (where discovery ran the server) is made absolute there, so `node
//     server.js` runs the host's file and never an agent's copy in the
//     workspace. Folders stay relative: `.` is how a server is told to serve
//     its working directory, the workspace. `--flag=value` is left alone;
//   - npx (and npm) gets `--prefix=<folder nobody can write into>` as its first
//     argument: npm's local prefix, so its project .npmrc, package.json,
//     node_modules and local bins are looked up there and never in the
//     workspace (npm only honours the command-line spelling for this), and
//     npm_config_script_shell naming a host-owned script that drops the
//     workspace's node_modules/.bin folders (and relative entries) from PATH
//     before the server's command is looked up, so neither the bin nor the
//     `node` of its #! line can come from the workspace;
//   - uvx and uv get UV_NO_CONFIG=1 (no uv.toml, pyproject.toml or
//     .python-version is discovered) and UV_NO_PROJECT=1 (`uv run` does not
//     take the workspace as its project). This follows uv's documented
//     configuration discovery; uv itself is not run by the tests.
//
// Each addition yields to the operator's own setting in env or args: the
// operator, never an agent, writes those.

// confine adds to cmd what keeps its launcher from reading configuration in
// the workspace it runs in.
func (c *Conn) confine(cmd *exec.Cmd, name string, env []string) error {
	for i, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			cmd.Env[i] = "PATH=" + absolutePath(v)
		}
	}
	if err := hostPaths(cmd); err != nil {
		return err
	}
	if !envHas(env, "PYTHONSAFEPATH") && !pythonScript(name, cmd.Args[1:]) {
		cmd.Env = append(cmd.Env, "PYTHONSAFEPATH=1")
	}
	switch filepath.Base(name) {
	case "npx", "npm":
		prefix, err := npxLocalPrefix()
		if err != nil {
			return err
		}
		cmd.Args = append([]string{cmd.Args[0], "--prefix=" + prefix}, cmd.Args[1:]...)
		if !envSetFold(env, "npm_config_script_shell") {
			shell, err := npxScriptShell()
			if err != nil {
				return err
			}
			cmd.Env = append(cmd.Env, "npm_config_script_shell="+shell)
		}
	case "uvx", "uv":
		if !envHas(env, "UV_NO_CONFIG") && !envHas(env, "UV_CONFIG_FILE") {
			cmd.Env = append(cmd.Env, "UV_NO_CONFIG=1")
		}
		if !envHas(env, "UV_NO_PROJECT") && !envHas(env, "UV_PROJECT") {
			cmd.Env = append(cmd.Env, "UV_NO_PROJECT=1")
		}
	}
	return nil
}

// hostPaths makes cmd's relative command path (one with a slash) and each
// relative argument that names an existing file in the host's working
// directory absolute there, before the child starts in the workspace: the
// server runs the files discovery ran, never a same-named one an agent wrote
// into the workspace. Arguments starting with '-' and folders stay as
// written (see confine).
func hostPaths(cmd *exec.Cmd) error {
	host, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("workspace launch: the host's working directory: %w", err)
	}
	if !filepath.IsAbs(cmd.Path) && strings.ContainsRune(cmd.Path, filepath.Separator) {
		cmd.Path = filepath.Join(host, cmd.Path)
	}
	for i, a := range cmd.Args[1:] {
		if a == "" || strings.HasPrefix(a, "-") || filepath.IsAbs(a) {
			continue
		}
		p := filepath.Join(host, a)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			cmd.Args[i+1] = p
		}
	}
	return nil
}

// absolutePath returns a PATH value without its empty and relative entries:
// they name the working directory, here the workspace, so a `#!/usr/bin/env
// node` line (npx's own) would find an agent's node there.
func absolutePath(path string) string {
	var keep []string
	for _, e := range filepath.SplitList(path) {
		if filepath.IsAbs(e) {
			keep = append(keep, e)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// envHas reports whether env (KEY=value entries) names key, exactly.
func envHas(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// procSuperMagic is the file system type of /proc (statfs f_type).
const procSuperMagic = 0x9fa0

// npxLocalPrefix is the npm local prefix of npx children in a workspace,
// computed once per process: /proc when it is the proc file system, where
// no process (root included) can create a .npmrc, a package.json or a
// node_modules, and whose only parent is /; otherwise an empty private
// folder of its own.
var npxLocalPrefix = sync.OnceValues(func() (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/proc", &st); err == nil && st.Type == procSuperMagic {
		return "/proc", nil
	}
	home, err := npxHome()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(home, "prefix")
	if err := os.Mkdir(dir, 0o500); err != nil {
		return "", fmt.Errorf("npx: create an empty local prefix: %w", err)
	}
	return dir, nil
})

// npxHome is a private folder (mode 0700, a fresh name) for the files npx
// children need from the host, made once per process.
var npxHome = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "antler-npx-")
	if err != nil {
		return "", fmt.Errorf("npx: create a private folder: %w", err)
	}
	return dir, nil
})

// scriptShell is the shell npm runs an npx command with. npm builds PATH as
// the package's bin folders, then <dir>/node_modules/.bin for the working
// directory and every parent up to /, then its node-gyp folder and the
// inherited PATH. The script cuts exactly that run of folders (the first
// place it occurs, so a bin folder npm found for the package under / stays),
// drops empty and relative entries (they name the working directory), and
// runs /bin/sh. It uses shell built-ins only: before PATH is cleaned, any
// command looked up could come from the workspace.
const scriptShell = `#!/bin/sh
# Antler: npm script shell for npx children that run in a thread workspace.
d=$(pwd -P) || exit 126
w=
while :; do
	w="$w${w:+:}${d%/}/node_modules/.bin"
	[ "$d" = / ] && break
	d=${d%/*}
	[ -n "$d" ] || d=/
done
p=":$PATH:"
case $p in
*":$w:"*) p="${p%%":$w:"*}:${p#*":$w:"}" ;;
esac
keep=
set -f
IFS=:
for e in $p; do
	case $e in
	/*) keep="$keep${keep:+:}$e" ;;
	esac
done
unset IFS
set +f
PATH=$keep
export PATH
exec /bin/sh "$@"
`

// npxScriptShell writes scriptShell into npxHome once and returns its path.
var npxScriptShell = sync.OnceValues(func() (string, error) {
	home, err := npxHome()
	if err != nil {
		return "", err
	}
	path := filepath.Join(home, "script-shell")
	if err := os.WriteFile(path, []byte(scriptShell), 0o500); err != nil {
		return "", fmt.Errorf("npx: write the script shell: %w", err)
	}
	return path, nil
})

// pythonScript reports whether command is a Python interpreter run on a
// script file (`python3 /srv/server.py`), as opposed to `-m`, `-c` or
// standard input. Python then puts the script's own folder, not the working
// directory, first on sys.path; hostPaths has made a relative script path
// absolute on the host, so that folder is the host's and PYTHONSAFEPATH
// would only cost the script its sibling imports. Every other child gets the
// variable: `python -m`, uvx's entry points and programs that start Python
// themselves would otherwise import from the workspace first.
func pythonScript(command string, args []string) bool {
	base := filepath.Base(command)
	if !strings.HasPrefix(base, "python") || strings.Trim(base[len("python"):], "0123456789.") != "" {
		return false
	}
	for _, a := range args {
		switch {
		case a == "-" || a == "--":
			return false
		case strings.HasPrefix(a, "--"):
			continue // --version and the like take no value before the script
		case strings.HasPrefix(a, "-"):
			if strings.ContainsAny(a[1:], "mcXW") {
				return false // -m module, -c code, or an option taking a value: keep it safe
			}
		default:
			return true
		}
	}
	return false
}
