package launchpolicy

// uvxValueArg reports whether token is an option of `uvx` (uv tool run) that
// takes a value: DeerFlow's _UVX_VALUE_ARGS, copied verbatim from
// DeerFlow's reference (uv 0.11.1).
//
// Unlike npm's tables (npm_options.go) this one is written by hand: it would
// have to be derived from uv's clap definitions (`uvx --help` of a pinned uv
// binary), and neither a uv binary nor any registry other than npm's is
// available where Antler is built. An option uv adds later is therefore
// treated as a flag without a value, so the token after it is read as the
// package and the screened region ends early. That weakens only a tripwire:
// uvx has no option that runs a string as code, and the exec flags are
// screened for it only in case a future uv adds one (see uvxGrammar).
func uvxValueArg(token string) bool {
	switch token {
	case "--allow-insecure-host", "--build-constraints", "--cache-dir", "--color", "--config-file",
		"--config-setting", "--config-settings-package", "--constraints", "--default-index", "--directory",
		"--env-file", "--exclude-newer", "--exclude-newer-package", "--extra-index-url", "--find-links",
		"--fork-strategy", "--from", "--index", "--index-strategy", "--index-url", "--keyring-provider",
		"--link-mode", "--no-binary-package", "--no-build-isolation-package", "--no-build-package",
		"--no-sources-package", "--overrides", "--prerelease", "--project", "--python", "--python-platform",
		"--refresh-package", "--reinstall-package", "--resolution", "--torch-backend", "--upgrade-package",
		"--with", "--with-editable", "--with-requirements",
		"-C", "-P", "-b", "-c", "-f", "-i", "-p", "-w":
		return true
	}
	return false
}
