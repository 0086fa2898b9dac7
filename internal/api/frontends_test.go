package api_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"chatd/internal/turn"
)

// TestFrontendProtocols drives POST /v1/ai-sdk/chat, its reattach stream and
// POST /v1/ag-ui from Node with the stock client packages pinned by
// testdata/frontends/package-lock.json (`ai`, `@ag-ui/client`): a streamed
// reply, blocks equal to history's, a form answered, a confirm declined, an
// expired answer, unknown threads, failures and reattach. The scenarios are
// in testdata/frontends/protocols.test.mjs; scripts/ensure-node-deps.sh
// installs the packages (make test runs it).
func TestFrontendProtocols(t *testing.T) {
	dir := filepath.Join("testdata", "frontends")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ai")); err != nil {
		if os.Getenv("CHATD_FRONTEND_TESTS") != "" {
			t.Fatalf("the frontend test packages are not installed; run scripts/ensure-node-deps.sh: %v", err)
		}
		t.Skip("the frontend test packages are not installed (make test installs them with scripts/ensure-node-deps.sh)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required for the frontend protocol tests: %v", err)
	}
	ts := newTestServer(t)
	// Elicitations on this one expire quickly, for the late answers.
	shortTTL := newTestServer(t, withTurnConfig(func(c *turn.Config) { c.ElicitationTTL = time.Second }))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "protocols.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"CHATD_URL="+ts.URL, "CHATD_SHORT_TTL_URL="+shortTTL.URL, "CHATD_PRINCIPAL_HEADER="+principalHeader,
		"NODE_ENV=test", "SUPPRESS_TRANSFORMATION_WARNINGS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test protocols.test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
