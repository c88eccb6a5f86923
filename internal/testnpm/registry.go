package testnpm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// LauncherPackage is the name (and bin name) of the one package Registry
// serves.
const LauncherPackage = "antler-test-fs"

// Registry starts an npm registry on loopback that serves one package,
// antler-test-fs 1.0.0, with no dependencies, whose bin runs the pinned
// server-filesystem (so `npx --yes antler-test-fs <dirs>` starts a real MCP
// server after a real npm install, without the internet). It returns the
// registry URL and the npm_config_* env that makes npx use it with an empty
// cache of the test's own. It skips or fails like Filesystem.
func Registry(t testing.TB) (string, map[string]string) {
	t.Helper()
	entry, err := url.Parse("file://" + Filesystem(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := fmt.Sprintf("#!/usr/bin/env node\nimport(%q)\n", entry.String())
	manifest := map[string]any{"name": LauncherPackage, "version": "1.0.0", "bin": map[string]string{LauncherPackage: "bin.js"}}
	pj, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	tgz := tarball(t, [][2]string{{"package/package.json", string(pj)}, {"package/bin.js", bin}})
	sum := sha512.Sum512(tgz)
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])

	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	tarURL := srv.URL + "/" + LauncherPackage + "/-/" + LauncherPackage + "-1.0.0.tgz"
	version := map[string]any{"name": LauncherPackage, "version": "1.0.0", "bin": manifest["bin"],
		"dist": map[string]string{"tarball": tarURL, "integrity": integrity}}
	packument, err := json.Marshal(map[string]any{"name": LauncherPackage,
		"dist-tags": map[string]string{"latest": "1.0.0"}, "versions": map[string]any{"1.0.0": version}})
	if err != nil {
		t.Fatal(err)
	}
	mux.HandleFunc("GET /"+LauncherPackage, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(packument)
	})
	mux.HandleFunc("GET /"+LauncherPackage+"/-/"+LauncherPackage+"-1.0.0.tgz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(tgz)
	})
	return srv.URL + "/", map[string]string{
		"npm_config_registry":        srv.URL + "/",
		"npm_config_cache":           t.TempDir(),
		"npm_config_fetch_retries":   "0",
		"npm_config_update_notifier": "false",
		"npm_config_audit":           "false",
		"npm_config_fund":            "false",
	}
}

// tarball returns a gzipped tar of files ({name, content} pairs).
func tarball(t testing.TB, files [][2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		name, body := f[0], f[1]
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
