package api_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/processor"
)

// floodProcessor streams count status deltas, each carrying size bytes of
// _meta, as fast as it can (far more than any socket buffer holds), then
// the reply text. The bulk rides _meta so the persisted reply stays small.
type floodProcessor struct {
	count, size int
}

func (p floodProcessor) Describe() string { return "streams a flood of status updates" }

func (p floodProcessor) Process(ctx context.Context, _ processor.Input, emit processor.Emit) (processor.Output, error) {
	status := map[string]any{"example.com/status": strings.Repeat("x", p.size)}
	for range p.count {
		if err := ctx.Err(); err != nil {
			return processor.Output{}, err
		}
		emit(processor.Delta{Meta: status})
	}
	reply := fmt.Sprintf("sent %d status updates", p.count)
	emit(processor.Delta{Text: reply})
	return processor.Output{Text: reply}, nil
}

// newTestStalledStream starts a streamed turn over a raw connection that
// never reads its response, as a client that hangs without disconnecting.
func newTestStalledStream(tb testing.TB, ts *testServer, as, threadID, message string) net.Conn {
	tb.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Close() })
	body := mustJSON(tb, map[string]string{"message": message})
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\n%s: %s\r\nAccept: text/event-stream\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		turnPath(threadID), ts.Listener.Addr(), principalHeader, as, len(body), body)
	_, err = io.WriteString(conn, req)
	require.NoError(tb, err)
	return conn
}

// TestStreamStalledClient checks that a client which stops reading cannot
// hold up the processor: the turn finishes within its timeout and is
// persisted, and the stalled connection is dropped rather than kept open.
func TestStreamStalledClient(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, kind storeKind) {
		flood := floodProcessor{count: 400, size: 64 << 10}
		ts := newTestServer(t, withStoreKind(kind), withProcessor("flood", flood),
			withConfig(func(c *api.Config) { c.TurnTimeout = 3 * time.Second; c.WriteTimeout = 500 * time.Millisecond }))
		thread := ts.mustCreateThread(t, alice, "flood")

		conn := newTestStalledStream(t, ts, alice, thread, "go")

		var history []wireMessage
		waitFor(t, "the turn of the stalled client to be persisted", func() bool {
			history = ts.mustHistory(t, alice, thread)
			return len(history) == 2
		})
		assert.Equal(t, "go", history[0].Message)
		assert.Equal(t, fmt.Sprintf("sent %d status updates", flood.count), history[1].Message)

		// The server gave up on the client: the output is several times what
		// the socket buffers hold, so the stream was cut short and the
		// connection closed, not left open waiting to be written to.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(waitTimeout)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		data, err := io.ReadAll(resp.Body)
		require.Error(t, err, "a client this far behind cannot have been sent the whole stream")
		var ne net.Error
		assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the stalled connection was left open")
		assert.NotContains(t, string(data), "event: turn.completed")

		// The thread is free again.
		ts.mustTurn(t, alice, thread, "next")
	})
}
