package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/processor"
	"chatd/internal/turn"
)

// floodProcessor streams count status deltas, each carrying size bytes of
// _meta, as fast as it can (far more than any socket buffer holds), then
// the reply text. The bulk rides _meta so the persisted reply stays small.
type floodProcessor struct {
	count, size int
	// finished receives once per turn the processor has run to its end.
	finished chan struct{}
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
	if p.finished != nil {
		p.finished <- struct{}{}
	}
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
// hold up the processor: the turn runs to its end and is persisted, and the
// stalled connection is dropped rather than kept open. Nothing in it races
// the clock: the turn timeout is far beyond any machine's pace, the test
// waits for the processor itself to finish, and the server gives up on the
// client because its queue overflows, which depends on bytes, not time.
func TestStreamStalledClient(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, kind storeKind) {
		flood := floodProcessor{count: 400, size: 64 << 10, finished: make(chan struct{}, 2)}
		ts := newTestServer(t, withStoreKind(kind), withProcessor("flood", flood),
			withTurnConfig(func(c *turn.Config) { c.TurnTimeout = time.Hour }))
		thread := ts.mustCreateThread(t, alice, "flood")

		conn := newTestStalledStream(t, ts, alice, thread, "go")

		// The processor ran to its end although nobody read its output.
		<-flood.finished
		var history []wireMessage
		waitFor(t, "the turn of the stalled client to be persisted", func() bool {
			history = ts.mustHistory(t, alice, thread)
			return len(history) == 2
		})
		assert.Equal(t, "go", history[0].Message)
		assert.Equal(t, fmt.Sprintf("sent %d status updates", flood.count), history[1].Message)

		// The server gave up on the client: the output is several times what
		// the socket buffers and the stream's queue hold, so the stream was
		// cut short and the connection closed (or reset, which can cost the
		// client what it had not read yet), not left open waiting to be
		// written to.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
		data, err := io.ReadAll(conn)
		var ne net.Error
		assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the stalled connection was left open")
		if len(data) > 0 {
			assert.True(t, bytes.HasPrefix(data, []byte("HTTP/1.1 200 OK\r\n")), "%.200q", data)
			assert.Contains(t, string(data), "Content-Type: text/event-stream")
		}
		assert.NotContains(t, string(data), "event: turn.completed", "a client this far behind cannot have been sent the whole stream")

		// The thread is free again.
		ts.mustTurn(t, alice, thread, "next")
		<-flood.finished
	})
}
