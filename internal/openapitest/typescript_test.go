package openapitest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestTypeScriptClient generates TypeScript types from openapi.yaml with
// openapi-typescript and compiles a client written with openapi-fetch
// against them (clients/typescript/client.ts, tsc --noEmit): the contract
// must type what a frontend reads — TurnResult narrowed on status, content
// blocks, chatd's _meta values — with no hand edits.
func TestTypeScriptClient(t *testing.T) {
	dir := filepath.Join("..", "..", "clients", "typescript")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "tsc")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the TypeScript client's packages are missing: make test installs them with scripts/ensure-node-deps.sh")
		}
		t.Skip("run scripts/ensure-node-deps.sh (make test does) to install the TypeScript client's packages")
	}
	cmd := exec.Command("npm", "run", "--silent", "check")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the typed client does not compile against openapi.yaml: %v\n%s", err, out)
	}
}
