package api

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSSEBufferBound: events for a client that never reads queue up to
// Config.SSEBufferBytes — the batch being written included — and no
// further: the stream is then dropped, and sending never waits on the
// client. A client that reads gets an event larger than the bound.
func TestSSEBufferBound(t *testing.T) {
	const limit = 64 << 10
	s := NewServer(Deps{Config: Config{SSEBufferBytes: limit, WriteTimeout: 30 * time.Second, HeartbeatInterval: -1}})
	data := []byte(`"` + strings.Repeat("x", 1000) + `"`)
	type outcome struct {
		sent, maxQueued int
		dropped         bool
	}
	done := make(chan outcome, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := s.startStream(w)
		defer st.close()
		if r.URL.Path == "/big" {
			st.send(1, "text.delta", []byte(`"`+strings.Repeat("y", 2*limit)+`"`))
			return
		}
		var o outcome
		for ; o.sent < 100_000 && !o.dropped; o.sent++ {
			st.send(o.sent, "text.delta", data)
			st.mu.Lock()
			o.maxQueued = max(o.maxQueued, len(st.pending)+st.writing)
			o.dropped = st.abandoned
			st.mu.Unlock()
		}
		done <- o
	}))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET /stall HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	o := <-done
	assert.True(t, o.dropped, "a client that never reads is dropped (after %d events)", o.sent)
	assert.LessOrEqual(t, o.maxQueued, limit, "queued bytes stay within the bound")
	var dropped dto.Metric
	require.NoError(t, s.metrics.droppedStreams.Write(&dropped))
	assert.Equal(t, 1.0, dropped.GetCounter().GetValue(), "the drop is counted")

	resp, err := http.Get(srv.URL + "/big")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body bytes.Buffer
	_, err = body.ReadFrom(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, body.String(), strings.Repeat("y", 2*limit), "one event larger than the bound still goes to a reading client")
}
