package api_test

import (
	"os"
	"testing"
)

// TestMain stops the Redis set-ups the package's tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	sharedRedis.stop()
	os.Exit(code)
}
