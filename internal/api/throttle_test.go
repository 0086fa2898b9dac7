package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHoldRefusal: a refusal waits out RefusalDelay unless its client
// leaves, and once MaxHeldRefusals wait, the next is answered at once.
func TestHoldRefusal(t *testing.T) {
	s := &Server{cfg: Config{RefusalDelay: time.Hour}, heldRefusals: make(chan struct{}, 1)}
	ctx, leave := context.WithCancel(context.Background())
	held := make(chan struct{})
	go func() {
		s.holdRefusal(httptest.NewRequest(http.MethodGet, "/v1/processors", nil).WithContext(ctx))
		close(held)
	}()
	require.Eventually(t, func() bool { return len(s.heldRefusals) == 1 }, 10*time.Second, time.Millisecond)
	// Held for an hour if it were held at all.
	s.holdRefusal(httptest.NewRequest(http.MethodGet, "/v1/processors", nil))
	assert.Len(t, s.heldRefusals, 1)
	leave()
	<-held
	assert.Empty(t, s.heldRefusals, "a client that left frees its place")
}
