package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/serve"
)

// patience bounds every wait in these tests. It is far longer than any
// timeout configured here, so a loaded machine cannot fail them; what they
// check is that a connection is closed at all, not how fast.
const patience = 20 * time.Second

// newTestServer serves h on a loopback port and returns its address.
func newTestServer(tb testing.TB, h http.Handler, t serve.Timeouts) (*serve.Server, string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	srv := serve.New(h, t, nil)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return srv, ln.Addr().String()
}

func mustDial(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}

// trickle writes s one byte every interval until s is sent or a write fails.
func trickle(conn net.Conn, s string, interval time.Duration) {
	for i := range len(s) {
		if _, err := conn.Write([]byte{s[i]}); err != nil {
			return
		}
		time.Sleep(interval)
	}
}

// waitClosed reads conn until the server closes it, returning what was read;
// it fails the test when the connection is still open after patience.
func waitClosed(tb testing.TB, conn net.Conn) string {
	tb.Helper()
	require.NoError(tb, conn.SetReadDeadline(time.Now().Add(patience)))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if err != nil && assert.ErrorAs(tb, err, &ne) {
		require.False(tb, ne.Timeout(), "the server did not close the connection within %s", patience)
	}
	return string(got)
}

func TestTrickledBodyIsCut(t *testing.T) {
	t.Parallel()
	readErr := make(chan error, 1)
	_, addr := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
		w.WriteHeader(http.StatusRequestTimeout)
	}), serve.Timeouts{Read: 300 * time.Millisecond})

	conn := mustDial(t, addr)
	_, err := fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err)
	go trickle(conn, strings.Repeat("x", 1000), 50*time.Millisecond)

	select {
	case err := <-readErr:
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout())
	case <-time.After(patience):
		t.Fatal("the body read was not cut")
	}
	assert.Contains(t, waitClosed(t, conn), "408")
}

func TestTrickledHeadersAreCut(t *testing.T) {
	t.Parallel()
	_, addr := newTestServer(t, http.NotFoundHandler(), serve.Timeouts{ReadHeader: 300 * time.Millisecond})
	conn := mustDial(t, addr)
	go trickle(conn, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "+strings.Repeat("y", 1000), 50*time.Millisecond)
	waitClosed(t, conn)
}

func TestSlowReaderIsDropped(t *testing.T) {
	t.Parallel()
	writeErr := make(chan error, 1)
	_, addr := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for range 4096 { // 256 MiB: far more than socket buffers hold
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}), serve.Timeouts{Write: 300 * time.Millisecond})

	conn := mustDial(t, addr)
	_, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	// The client never reads.
	select {
	case err := <-writeErr:
		assert.Error(t, err, "the response was written although the client never read it")
	case <-time.After(patience):
		t.Fatal("the stalled response was not dropped")
	}
}

func TestIdleConnectionIsClosed(t *testing.T) {
	t.Parallel()
	_, addr := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), serve.Timeouts{Idle: 300 * time.Millisecond})
	conn := mustDial(t, addr)
	_, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	waitClosed(t, conn)
}

// TestReadTimeoutSparesLongResponses checks that the whole-request read
// deadline ends with the body: a response that takes longer than it (a turn,
// a stream) keeps its request context.
func TestReadTimeoutSparesLongResponses(t *testing.T) {
	t.Parallel()
	_, addr := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		rc := http.NewResponseController(w)
		for i := range 10 {
			time.Sleep(100 * time.Millisecond)
			// A streaming handler moves its write deadline event by event.
			_ = rc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			_, _ = fmt.Fprintf(w, "event %d\n", i)
			_ = rc.Flush()
		}
		if r.Context().Err() != nil {
			_, _ = io.WriteString(w, "cancelled\n")
			return
		}
		_, _ = io.WriteString(w, "done\n")
	}), serve.Timeouts{Read: 200 * time.Millisecond, Write: 200 * time.Millisecond})

	for _, body := range []string{"", "{}"} {
		conn := mustDial(t, addr)
		_, err := fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		require.NoError(t, err)
		got := waitClosed(t, conn)
		assert.Contains(t, got, "event 9\n")
		assert.Contains(t, got, "done\n")
	}
}

// TestShutdownClosesWaitingConnections checks that shutdown closes idle
// connections, connections still sending headers and connections still
// sending a body at once, while it waits for a running handler.
func TestShutdownClosesWaitingConnections(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	running := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	srv := serve.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy":
			close(running)
			<-release
			_, _ = io.WriteString(w, "finished")
		default:
			if _, err := io.ReadAll(r.Body); err != nil {
				w.WriteHeader(http.StatusRequestTimeout)
				return
			}
			_, _ = io.WriteString(w, "ok")
		}
	}), serve.Timeouts{ReadHeader: time.Hour, Read: time.Hour, Idle: time.Hour}, nil)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	idle := mustDial(t, addr)
	_, err = fmt.Fprintf(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)

	headers := mustDial(t, addr)
	_, err = fmt.Fprintf(headers, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: y")
	require.NoError(t, err)

	body := mustDial(t, addr)
	_, err = fmt.Fprintf(body, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nxx")
	require.NoError(t, err)

	busy := mustDial(t, addr)
	_, err = fmt.Fprintf(busy, "GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	<-running

	// Let the server see the partial requests before it shuts down.
	time.Sleep(200 * time.Millisecond)
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()

	waitClosed(t, idle)
	waitClosed(t, headers)
	assert.Contains(t, waitClosed(t, body), "408")
	select {
	case err := <-shut:
		t.Fatalf("shutdown returned (%v) while a handler was running", err)
	default:
	}
	close(release)
	assert.Contains(t, waitClosed(t, busy), "finished")
	select {
	case err := <-shut:
		assert.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("shutdown did not return after the last handler")
	}
	assert.ErrorIs(t, <-served, http.ErrServerClosed)
}
