package launchpolicy

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestFileConfigAttackWithRealNpx performs the attack for real with the
// pinned npx: a config file the launch names (here /proc/self/environ, the
// child's own environment, or a file holding the same lines) sets `call`
// (with no package: npm exec runs it) or `node-options` (with a package: the
// real server starts and stays usable, and node loads the payload first).
// Each spelling must run the canary when nothing screens it, and the policy
// must refuse that launch without naming a value.
func TestFileConfigAttackWithRealNpx(t *testing.T) {
	npmDir := pinnedNPM(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	npx := filepath.Join(npmDir, "bin", "npx-cli.js")
	servers := filepath.Join(root, "testdata", "npm") // its node_modules/.bin has mcp-server-everything
	const environ = "/proc/self/environ"
	type spelling struct {
		name string
		args []string          // "F" is replaced by the config file
		env  map[string]string // "F" likewise
		node bool              // node-options payload with a package, else call without one
	}
	env := func(k string) map[string]string { return map[string]string{k: "F"} }
	cases := []spelling{
		{"npm_config_userconfig", nil, env("npm_config_userconfig"), false},
		{"NPM_CONFIG_USERCONFIG", nil, env("NPM_CONFIG_USERCONFIG"), false},
		{"Npm_Config_Userconfig", nil, env("Npm_Config_Userconfig"), false},
		{"npm_config_globalconfig", nil, env("npm_config_globalconfig"), false},
		{"NPM_CONFIG_GLOBALCONFIG", nil, env("NPM_CONFIG_GLOBALCONFIG"), false},
		{"--userconfig=", []string{"--userconfig=F"}, nil, false},
		{"--userconfig F", []string{"--userconfig", "F"}, nil, false},
		{"--userc=", []string{"--userc=F"}, nil, false},
		{"---userconfig F", []string{"---userconfig", "F"}, nil, false},
		{"--yes=--userconfig=", []string{"--yes=--userconfig=F"}, nil, false},
		{"--globalconfig=", []string{"--globalconfig=F"}, nil, false},
		{"--globalc F", []string{"-y", "--globalc", "F"}, nil, false},
		{"node-options via npm_config_userconfig", []string{"-y", "mcp-server-everything"}, env("npm_config_userconfig"), true},
		{"node-options via --userconfig", []string{"--userconfig", "F", "-y", "mcp-server-everything"}, nil, true},
	}
	p := New()
	for _, tc := range cases {
		for _, file := range []string{environ, "rcfile"} {
			t.Run(tc.name+" "+filepath.Base(file), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				canary := filepath.Join(dir, "canary")
				payload := "\ncall=touch " + canary + "\n"
				if tc.node {
					payload = "\nnode-options=--import=data:text/javascript,import('fs').then(f=>f.writeFileSync('" + canary + "',''))\n"
				}
				cfg := file
				if file != environ {
					cfg = filepath.Join(dir, "npmrc")
					if err := os.WriteFile(cfg, []byte(payload), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				subst := func(s string) string { return strings.ReplaceAll(s, "F", cfg) }
				args := make([]string, len(tc.args))
				for i, a := range tc.args {
					args[i] = subst(a)
				}
				launchEnv := map[string]string{"PAYLOAD": payload}
				for k, v := range tc.env {
					launchEnv[k] = subst(v)
				}
				home := filepath.Join(dir, "home")
				if err := os.Mkdir(home, 0o700); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, "node", append([]string{npx}, args...)...)
				cmd.Dir = dir
				if tc.node {
					cmd.Dir = servers
				}
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "npm_config_update_notifier=false", "npm_config_offline=true"}
				var names []string
				for k, v := range launchEnv {
					cmd.Env = append(cmd.Env, k+"="+v)
					names = append(names, k)
				}
				sort.Strings(names)
				out, runErr := cmd.CombinedOutput()
				if _, err := os.Stat(canary); err != nil {
					t.Fatalf("unscreened, npx %q with %q did not run the payload (%v); the attack no longer works here, so this test proves nothing:\n%s", args, names, runErr, out)
				}

				err := p.Check(Launch{Server: "srv", Type: "stdio", Command: "npx", Args: args, EnvNames: names})
				var pe *Error
				if !errors.As(err, &pe) || !slices.Contains([]Kind{LauncherConfig, MissingPackage}, pe.Kind) {
					t.Fatalf("policy on npx %q env %q: %v, want a LauncherConfig or MissingPackage refusal", args, names, err)
				}
				if msg := err.Error(); strings.Contains(msg, cfg) || strings.Contains(msg, canary) {
					t.Errorf("message %q shows a value", msg)
				}
				// The same launch with a package still names the file option.
				if !tc.node {
					err := p.Check(Launch{Server: "srv", Command: "npx", Args: append(slices.Clone(args), "-y", "pkg"), EnvNames: names})
					if !errors.As(err, &pe) || pe.Kind != LauncherConfig {
						t.Errorf("policy on npx %q -y pkg env %q: %v, want LauncherConfig", args, names, err)
					}
				}
			})
		}
	}
}
