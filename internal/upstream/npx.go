package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// npx runs an existing executable instead of a package when the first
// argument names one in npm's global bin folder, <prefix>/bin. With Node
// installed under /usr the prefix is /usr, so `npx bash -c …` or
// `npx node -e …` run /usr/bin/bash and /usr/bin/node. A child started as
// npx therefore gets an npm prefix where nothing can exist (npxPrefix), so
// the global bin folder is empty and npx resolves such a name as a registry
// package instead, unless the server's env sets npm_config_prefix: that is
// the operator's explicit choice (the config admin API refuses the variable,
// see internal/launchpolicy).
//
// Moving the prefix also moves npm's default global config file
// (<prefix>/etc/npmrc), which can hold the settings every npm run on the
// host relies on (a cafile for a TLS-inspecting proxy, a registry mirror), so
// the child is told where npm would have found it (npmGlobalConfig).

// npxPrefixName is the npm prefix of npx children: below the null device, a
// character device, so neither the host nor a child (nor root) can create
// it, and walking up from it passes only /dev and /.
const npxPrefixName = "antler-npx-prefix"

// npxPrefix is computed once per process.
var npxPrefix = sync.OnceValues(func() (string, error) { return nullPrefix(os.DevNull, os.TempDir()) })

// nullPrefix returns <devNull>/antler-npx-prefix when devNull is a character
// device. Otherwise (a chroot without /dev) it makes a private, empty
// directory under tmp (os.MkdirTemp: a fresh name, mode 0700, never a
// directory someone else created first).
func nullPrefix(devNull, tmp string) (string, error) {
	if fi, err := os.Lstat(devNull); err == nil && fi.Mode()&fs.ModeCharDevice != 0 {
		return filepath.Join(devNull, npxPrefixName), nil
	}
	dir, err := os.MkdirTemp(tmp, npxPrefixName+"-")
	if err != nil {
		return "", fmt.Errorf("npx: create an empty npm prefix: %w", err)
	}
	return dir, nil
}

// isNpx reports whether a stdio command is npx: its base name, exactly.
func isNpx(command string) bool { return filepath.Base(command) == "npx" }

// envSetFold reports whether env (KEY=value entries) gives key a non-empty
// value, comparing names case-insensitively: npm reads npm_config_* names in
// any case and ignores empty values.
func envSetFold(env []string, key string) bool {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.EqualFold(k, key) && v != "" {
			return true
		}
	}
	return false
}

// npxEnv returns the variables added to the environment of an npx child:
// npm_config_prefix, and npm_config_globalconfig where npm says it is, each
// unless env (the child's environment so far) sets it. npxPath is the
// executable that will run.
func (c *Conn) npxEnv(npxPath string, env []string) ([]string, error) {
	if envSetFold(env, "npm_config_prefix") {
		return nil, nil
	}
	prefix, err := npxPrefix()
	if err != nil {
		return nil, err
	}
	out := []string{"npm_config_prefix=" + prefix}
	if envSetFold(env, "npm_config_globalconfig") {
		return out, nil
	}
	gc, err := npmGlobalConfig(npxPath, env)
	if err != nil {
		c.log.Warn("npx child: npm's global config file is not known, so the child will not read it; set npm_config_globalconfig in the server's env if it needs one", "error", err.Error())
		return out, nil
	}
	return append(out, "npm_config_globalconfig="+gc), nil
}

// globalConfigs caches npmGlobalConfig's answers by npm and environment.
var globalConfigs sync.Map

// globalConfigTimeout bounds one `npm config get globalconfig`.
const globalConfigTimeout = 15 * time.Second

// npmGlobalConfig asks the npm next to npxPath which global config file it
// reads with the child's environment, before the prefix is moved: only the
// variables npm's answer depends on are passed (HOME for the user config,
// PATH for node, PREFIX and DESTDIR for the default prefix, npm_config_*), it
// runs in / so that no project .npmrc of the server's folder takes part, and
// it writes no log file and asks no registry for updates.
func npmGlobalConfig(npxPath string, env []string) (string, error) {
	if !filepath.IsAbs(npxPath) {
		return "", fmt.Errorf("npx was not found (%q)", npxPath)
	}
	npm := filepath.Join(filepath.Dir(npxPath), "npm")
	var qenv []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "PATH", k == "PREFIX", k == "DESTDIR",
			len(k) >= len("npm_config_") && strings.EqualFold(k[:len("npm_config_")], "npm_config_"):
			qenv = append(qenv, kv)
		}
	}
	qenv = append(qenv, "npm_config_logs_max=0", "npm_config_update_notifier=false")
	key := npm + "\x00" + strings.Join(qenv, "\x00")
	if v, ok := globalConfigs.Load(key); ok {
		return v.(string), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), globalConfigTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "config", "get", "globalconfig")
	cmd.Env = qenv
	cmd.Dir = "/"
	cmd.WaitDelay = time.Second
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s config get globalconfig: %w", npm, err)
	}
	gc := strings.TrimSpace(stdout.String())
	if !filepath.IsAbs(gc) || strings.ContainsAny(gc, "\n\r") {
		return "", errors.New("npm config get globalconfig did not print an absolute path")
	}
	globalConfigs.Store(key, gc)
	return gc, nil
}
