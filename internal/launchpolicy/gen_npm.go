//go:build ignore

// gen_npm writes npm_options.go from the npm pinned in testdata/npm. It is
// run by `go generate ./internal/launchpolicy/` (see the directive in
// launchpolicy.go), from this package's folder, after
// `npm ci --prefix testdata/npm` at the repository root.
package main

import (
	"log"
	"os"
	"path/filepath"

	"github.com/antler-mcp/antler/internal/launchpolicy/internal/npmgen"
)

func main() {
	npmDir := filepath.Join("..", "..", "testdata", "npm", "node_modules", "npm")
	if _, err := os.Stat(filepath.Join(npmDir, "package.json")); err != nil {
		log.Fatalf("gen_npm: pinned npm not installed (%v); run `npm ci --prefix testdata/npm` at the repository root", err)
	}
	src, err := npmgen.Generate(npmDir)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("npm_options.go", src, 0o644); err != nil {
		log.Fatalf("gen_npm: %v", err)
	}
}
