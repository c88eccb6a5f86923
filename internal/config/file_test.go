package config_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestResolvePath: explicit > $ANTLER_EXTENSIONS_CONFIG >
// $DEER_FLOW_EXTENSIONS_CONFIG_PATH > ./extensions_config.json >
// ./mcp_config.json; a named file that is missing is an error; nothing
// found is "" (no servers). Not parallel: it changes the working directory.
func TestResolvePath(t *testing.T) {
	tests := []struct {
		name     string
		files    []string // created relative to the working directory
		dirs     []string
		explicit string
		env      map[string]string
		want     string // relative to the working directory; "" for none
		errFrom  string // source named by an ErrExplicitMissing error
	}{
		{name: "nothing found", want: ""},
		{name: "explicit wins over everything",
			files:    []string{"flag.json", "antler.json", "deer.json", "extensions_config.json", "mcp_config.json"},
			explicit: "flag.json",
			env:      map[string]string{config.EnvPath: "antler.json", config.EnvDeerFlowPath: "deer.json"},
			want:     "flag.json"},
		{name: "ANTLER_EXTENSIONS_CONFIG over DeerFlow's variable",
			files: []string{"antler.json", "deer.json", "extensions_config.json"},
			env:   map[string]string{config.EnvPath: "antler.json", config.EnvDeerFlowPath: "deer.json"},
			want:  "antler.json"},
		{name: "DEER_FLOW_EXTENSIONS_CONFIG_PATH over the working directory",
			files: []string{"deer.json", "extensions_config.json", "mcp_config.json"},
			env:   map[string]string{config.EnvDeerFlowPath: "deer.json"},
			want:  "deer.json"},
		{name: "extensions_config.json over mcp_config.json",
			files: []string{"extensions_config.json", "mcp_config.json"},
			want:  "extensions_config.json"},
		{name: "mcp_config.json alone",
			files: []string{"mcp_config.json"},
			want:  "mcp_config.json"},
		{name: "a directory named extensions_config.json is skipped",
			dirs:  []string{"extensions_config.json"},
			files: []string{"mcp_config.json"},
			want:  "mcp_config.json"},
		{name: "empty variables count as unset",
			files: []string{"extensions_config.json"},
			env:   map[string]string{config.EnvPath: "", config.EnvDeerFlowPath: ""},
			want:  "extensions_config.json"},
		{name: "explicit path in a subdirectory",
			files:    []string{"conf/ext.json"},
			explicit: "conf/ext.json",
			want:     "conf/ext.json"},
		{name: "explicit missing is an error even when others exist",
			files:    []string{"extensions_config.json"},
			explicit: "missing.json",
			env:      map[string]string{config.EnvPath: "extensions_config.json"},
			errFrom:  "--config"},
		{name: "ANTLER_EXTENSIONS_CONFIG missing is an error, no fallback",
			files:   []string{"deer.json", "extensions_config.json"},
			env:     map[string]string{config.EnvPath: "missing.json", config.EnvDeerFlowPath: "deer.json"},
			errFrom: "environment variable ANTLER_EXTENSIONS_CONFIG"},
		{name: "DEER_FLOW_EXTENSIONS_CONFIG_PATH missing is an error",
			files:   []string{"extensions_config.json"},
			env:     map[string]string{config.EnvDeerFlowPath: "missing.json"},
			errFrom: "environment variable DEER_FLOW_EXTENSIONS_CONFIG_PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			for _, f := range tt.files {
				writeFile(t, filepath.Join(dir, f), "{}")
			}
			for _, d := range tt.dirs {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, err := config.ResolvePath(tt.explicit, env(tt.env))
			if tt.errFrom != "" {
				if !errors.Is(err, config.ErrExplicitMissing) {
					t.Fatalf("err = %v, want one wrapping ErrExplicitMissing", err)
				}
				if !strings.Contains(err.Error(), "specified by "+tt.errFrom) {
					t.Errorf("error %q does not name %q", err, tt.errFrom)
				}
				if !strings.Contains(err.Error(), filepath.Join(dir, "missing.json")) {
					t.Errorf("error %q does not name the path", err)
				}
				equal(t, "path", got, "")
				return
			}
			if err != nil {
				t.Fatalf("ResolvePath: %v", err)
			}
			want := ""
			if tt.want != "" {
				want = filepath.Join(dir, tt.want)
			}
			equal(t, "path", got, want)
			if got != "" && !filepath.IsAbs(got) {
				t.Errorf("path %q is not absolute", got)
			}
		})
	}
}

// TestResolvePathNilLookupUsesProcessEnvironment: nil means os.LookupEnv.
func TestResolvePathNilLookupUsesProcessEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	path := filepath.Join(dir, "from-env.json")
	writeFile(t, path, "{}")
	t.Setenv(config.EnvPath, path)
	got, err := config.ResolvePath("", nil)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "path", got, path)
}

func sha(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// TestStat follows DeerFlow's test_file_signature.
func TestStat(t *testing.T) {
	dir := t.TempDir()

	t.Run("missing file", func(t *testing.T) {
		sig, ok := config.Fingerprint(filepath.Join(dir, "missing.json"))
		equal(t, "ok", ok, false)
		equal(t, "sig", sig, config.Signature{})
	})
	t.Run("directory", func(t *testing.T) {
		_, ok := config.Fingerprint(dir)
		equal(t, "ok", ok, false)
	})
	t.Run("full signature", func(t *testing.T) {
		path := filepath.Join(dir, "full.json")
		writeFile(t, path, `{"mcpServers": {}}`)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		sig, ok := config.Fingerprint(path)
		equal(t, "ok", ok, true)
		equal(t, "sig", sig, config.Signature{ModTime: st.ModTime().UnixNano(), Size: st.Size(), SHA256: sha(`{"mcpServers": {}}`)})
		equal(t, "Verifiable", sig.Verifiable(), true)
		again, _ := config.Fingerprint(path)
		equal(t, "unchanged file", again, sig)
	})
	t.Run("same mtime and size, different content", func(t *testing.T) {
		path := filepath.Join(dir, "swap.json")
		writeFile(t, path, `{"mcpServers": {"a": {}}}`)
		before, _ := config.Fingerprint(path)
		mtime := time.Unix(0, before.ModTime)
		writeFile(t, path, `{"mcpServers": {"b": {}}}`)
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		after, ok := config.Fingerprint(path)
		equal(t, "ok", ok, true)
		equal(t, "ModTime", after.ModTime, before.ModTime)
		equal(t, "Size", after.Size, before.Size)
		if after == before {
			t.Error("a same-second, same-size swap kept the signature")
		}
		equal(t, "SHA256", after.SHA256, sha(`{"mcpServers": {"b": {}}}`))
	})
	t.Run("mtime moved backwards", func(t *testing.T) {
		path := filepath.Join(dir, "back.json")
		writeFile(t, path, `{"a": 1}`)
		before, _ := config.Fingerprint(path)
		writeFile(t, path, `{"a": 2, "b": 3}`)
		old := time.Unix(0, before.ModTime).Add(-time.Hour)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		after, _ := config.Fingerprint(path)
		if after == before {
			t.Error("signature unchanged")
		}
	})
	t.Run("unverifiable signature", func(t *testing.T) {
		equal(t, "Verifiable", config.Signature{ModTime: 1, Size: 2}.Verifiable(), false)
	})
}

// TestLoad: the signature Load returns is that of the bytes it parsed, and
// errors name the file but never a value.
func TestLoad(t *testing.T) {
	dir := t.TempDir()

	t.Run("signature equals Stat of the unchanged file", func(t *testing.T) {
		path := filepath.Join(dir, "ok.json")
		writeFile(t, path, `{"mcpServers": {"fs": {"command": "c"}}}`)
		ext, sig, err := config.Load(path, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "servers", serverNames(ext.Servers), []string{"fs"})
		st, ok := config.Fingerprint(path)
		equal(t, "ok", ok, true)
		equal(t, "signature", sig, st)
	})
	t.Run("empty path is an empty configuration", func(t *testing.T) {
		ext, sig, err := config.Load("", noEnv)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "servers", len(ext.Servers), 0)
		equal(t, "sig", sig, config.Signature{})
		if ext.Raw == nil {
			t.Error("Raw is nil")
		}
		_ = ext.MCPDigest()
	})
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(dir, "missing.json")
		_, _, err := config.Load(path, noEnv)
		var le *config.LoadError
		if !errors.As(err, &le) {
			t.Fatalf("err = %v (%T), want *config.LoadError", err, err)
		}
		equal(t, "LoadError.Path", le.Path, path)
		if !errors.Is(err, config.ErrExplicitMissing) {
			t.Errorf("err = %v, want one wrapping ErrExplicitMissing", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		_, _, err := config.Load(dir, noEnv)
		if err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		path := filepath.Join(dir, "bad.json")
		writeFile(t, path, `{"mcpServers": `)
		_, sig, err := config.Load(path, noEnv)
		var syn *config.SyntaxError
		if !errors.As(err, &syn) {
			t.Fatalf("err = %v (%T), want a *config.SyntaxError inside", err, err)
		}
		if want := "extensions config file at " + path + " is not valid JSON: "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("message %q, want prefix %q", err, want)
		}
		equal(t, "sig.SHA256", sig.SHA256, sha(`{"mcpServers": `))
	})
	t.Run("problems name the file and the fields, not the values", func(t *testing.T) {
		path := filepath.Join(dir, "problems.json")
		writeFile(t, path, `{"mcpServers": {"x": {"command": "c", "routing": {"mode": "$MODE"}, "args": [1]}}}`)
		_, _, err := config.Load(path, constant("hunter2"))
		p := problemsOf(t, err)
		equal(t, "paths", problemPaths(p), []string{"mcpServers.x.args[0]", "mcpServers.x.routing.mode"})
		msg := err.Error()
		if !strings.HasPrefix(msg, "load extensions config from "+path+": ") {
			t.Errorf("message %q does not name the file", msg)
		}
		if strings.Contains(msg, "hunter2") {
			t.Errorf("message shows a resolved variable: %q", msg)
		}
	})
}

// TestLocate is the quiet form used on the hot path: names resolve against
// the given directory (not the working directory) and a named file is
// returned with its source, without checking that it exists.
func TestLocate(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	t.Chdir(other) // Locate must not look here
	writeFile(t, filepath.Join(other, "extensions_config.json"), "{}")
	tests := []struct {
		name       string
		files      []string
		explicit   string
		env        map[string]string
		wantPath   string // relative to dir unless absolute; "" for none
		wantSource string
	}{
		{name: "nothing", wantPath: "", wantSource: ""},
		{name: "explicit missing is returned with its source", explicit: "missing.json", wantPath: "missing.json", wantSource: "--config"},
		{name: "explicit over variables", explicit: "flag.json", env: map[string]string{config.EnvPath: "a.json"}, wantPath: "flag.json", wantSource: "--config"},
		{name: "absolute explicit is cleaned", explicit: "/etc/../etc/antler/ext.json", wantPath: "/etc/antler/ext.json", wantSource: "--config"},
		{name: "ANTLER variable", env: map[string]string{config.EnvPath: "a.json", config.EnvDeerFlowPath: "d.json"}, wantPath: "a.json", wantSource: "environment variable ANTLER_EXTENSIONS_CONFIG"},
		{name: "DeerFlow variable", env: map[string]string{config.EnvDeerFlowPath: "sub/d.json"}, wantPath: "sub/d.json", wantSource: "environment variable DEER_FLOW_EXTENSIONS_CONFIG_PATH"},
		{name: "default file in dir", files: []string{"mcp_config.json"}, wantPath: "mcp_config.json", wantSource: ""},
		{name: "defaults in order", files: []string{"mcp_config.json", "extensions_config.json"}, wantPath: "extensions_config.json", wantSource: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, n := range config.DefaultNames {
				os.Remove(filepath.Join(dir, n))
			}
			for _, f := range tt.files {
				writeFile(t, filepath.Join(dir, f), "{}")
			}
			path, source := config.Locate(tt.explicit, env(tt.env), dir)
			want := tt.wantPath
			if want != "" && !filepath.IsAbs(want) {
				want = filepath.Join(dir, want)
			}
			equal(t, "path", path, want)
			equal(t, "source", source, tt.wantSource)
		})
	}
}

// TestSignerReusesItsBufferCorrectly: one Signer checking files of different
// sizes in turn gives the same signatures as Stat (no stale bytes from a
// larger earlier read).
func TestSignerReusesItsBufferCorrectly(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	small := filepath.Join(dir, "small.json")
	empty := filepath.Join(dir, "empty.json")
	writeFile(t, big, `{"mcpServers": {"a": {"command": "`+strings.Repeat("x", 4096)+`"}}}`)
	writeFile(t, small, `{}`)
	writeFile(t, empty, ``)
	var s config.Signer
	for _, path := range []string{big, small, empty, big, small, filepath.Join(dir, "missing"), small} {
		got, gotOK := s.Fingerprint(path)
		want, wantOK := config.Fingerprint(path)
		equal(t, filepath.Base(path)+" ok", gotOK, wantOK)
		equal(t, filepath.Base(path)+" signature", got, want)
	}
	sig, _ := s.Fingerprint(empty)
	equal(t, "empty SHA256", sig.SHA256, sha(""))
	equal(t, "empty Verifiable", sig.Verifiable(), true)
}

// TestStatUnreadableFile: a file that exists but cannot be read has a
// partial signature that does not prove a revision.
func TestStatUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can read any file")
	}
	path := filepath.Join(t.TempDir(), "locked.json")
	writeFile(t, path, "{}")
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	sig, ok := config.Fingerprint(path)
	equal(t, "ok", ok, true)
	equal(t, "Size", sig.Size, int64(2))
	equal(t, "Verifiable", sig.Verifiable(), false)
}

// A file above MaxFileSize is refused by its size: Load names the limit, and
// the config signer signs it from the stat alone (no hash: never read).
func TestOversizeFileIsRefusedBySize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		size int
		ok   bool
	}{
		{"at the limit", int(config.MaxFileSize), true},
		{"one byte over", int(config.MaxFileSize) + 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".json")
			body := `{"mcpServers": {}}`
			if err := os.WriteFile(path, []byte(body+strings.Repeat(" ", tt.size-len(body))), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := config.Load(path, nil)
			if tt.ok != (err == nil) || (!tt.ok && !errors.Is(err, config.ErrFileTooLarge)) {
				t.Fatalf("Load: %v, want ok=%v or ErrFileTooLarge", err, tt.ok)
			}
			if !tt.ok && !strings.Contains(err.Error(), "above the limit of 4194304 bytes") {
				t.Errorf("error %q does not name the limit", err)
			}
			signer := config.ConfigSigner()
			sig, present := signer.Fingerprint(path)
			if !present || sig.Size != int64(tt.size) || sig.Verifiable() != tt.ok {
				t.Errorf("signature %+v present=%v: want size %d, hashed=%v", sig, present, tt.size, tt.ok)
			}
		})
	}
}
