package launchpolicy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/antler-mcp/antler/internal/launchpolicy/internal/npmgen"
)

// pinnedNPM returns the folder of the npm pinned in testdata/npm. When it or
// node is missing the test is skipped, except under CI=true, where that is a
// failure: CI must run the checks against the real npm.
func pinnedNPM(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "testdata", "npm", "node_modules", "npm")
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		unavailable(t, "the pinned npm is not installed (%v); run `npm ci --prefix testdata/npm` from the repository root", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		unavailable(t, "node is not on PATH (install Node.js 20+, then run `npm ci --prefix testdata/npm`)")
	}
	return dir
}

func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := "launchpolicy: " + fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// repoRoot walks up from the working folder to the one holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working folder")
		}
		dir = parent
	}
}

// TestGeneratedTablesUpToDate regenerates npm_options.go from the pinned npm
// into a temporary folder and compares it with the committed file.
func TestGeneratedTablesUpToDate(t *testing.T) {
	npmDir := pinnedNPM(t)
	src, err := npmgen.Generate(npmDir)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "npm_options.go")
	if err := os.WriteFile(tmp, src, 0o644); err != nil {
		t.Fatal(err)
	}
	regenerated, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("npm_options.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(regenerated, committed) {
		t.Fatalf("npm_options.go is stale for the npm in %s; run `go generate ./internal/launchpolicy/`", npmDir)
	}
}

// TestBooleanArgsAgainstDeerFlow pins the differences between the generated
// boolean table and DeerFlow's hand-copied _NPM_BOOLEAN_ARGS (both said to be
// npm 10.9.4's): --browser and --color list Boolean among other accepted
// types, which is what makes npx-cli.js treat them as switches, and -p is
// npm's --parseable, left out by DeerFlow because npx rewrites it to
// --package (npxGrammar still treats -p as taking a value).
func TestBooleanArgsAgainstDeerFlow(t *testing.T) {
	onlyGen, onlyDeer := npmgen.CompareWithDeerFlow(npmBooleanArgs())
	if want := []string{"--browser", "--color", "-p"}; !reflect.DeepEqual(onlyGen, want) {
		t.Errorf("only in the generated table: %q, want %q", onlyGen, want)
	}
	if len(onlyDeer) != 0 {
		t.Errorf("only in DeerFlow's table: %q, want none", onlyDeer)
	}
	if npmVersion != "10.9.4" {
		t.Errorf("tables generated from npm %s; DeerFlow's come from 10.9.4", npmVersion)
	}
	for _, f := range npmBooleanArgs() {
		if !npmBooleanArg(f) {
			t.Errorf("npmBooleanArg(%q) = false", f)
		}
	}
	if !npxGrammar().consumesValue("-p") || npxGrammar().consumesValue("-y") || !npxGrammar().consumesValue("--registry") {
		t.Error("npxGrammar: -p must take a value, -y must not, --registry must")
	}
}
