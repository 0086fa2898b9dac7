package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets a test run chatd's real main in a child process (the test
// binary itself), to send it real signals.
func TestMain(m *testing.M) {
	if os.Getenv("CHATD_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// patience bounds waits for something that must happen; it is far above
// every timeout configured here, so a busy machine cannot fail a test.
const patience = 30 * time.Second

// TestRunCutsTrickledBody sends a body one byte every 100ms to a chatd with
// a 500ms read timeout: it answers 408 request_timeout and closes.
func TestRunCutsTrickledBody(t *testing.T) {
	base, _, _ := startRun(t, map[string]string{"CHATD_READ_TIMEOUT": "500ms"})
	status, thread := mustDo(t, http.MethodPost, base+"/v1/threads", "", nil)
	require.Equal(t, http.StatusCreated, status)

	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	body := `{"message":"` + strings.Repeat("x", 200) + `"}`
	_, err = fmt.Fprintf(conn, "POST /v1/threads/%s/turns HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		thread["id"], len(body))
	require.NoError(t, err)
	go func() {
		for i := range len(body) {
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(patience)))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	raw, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(raw), `"code":"request_timeout"`)
	// And the connection is closed, not kept for the rest of the trickle.
	_, err = br.ReadByte()
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "connection still open: %v", err)
}

// TestSecondSignalExitsAtOnce starts chatd as a process, keeps a turn
// running, and signals twice: the first signal drains (the process stays up
// while the turn runs), the second ends the process at once.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	addr := freeAddr(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CHATD_TEST_RUN_MAIN=1", "CHATD_ADDR="+addr, "CHATD_PROCESSORS=demo,echo", "CHATD_DEFAULT_PROCESSOR=echo",
		"CHATD_LOG_LEVEL=warn")
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, patience, 20*time.Millisecond)
	status, thread := mustDo(t, http.MethodPost, base+"/v1/threads", "", nil)
	require.Equal(t, http.StatusCreated, status)

	// A turn of 300 words, 200ms apart, keeps the graceful shutdown busy for
	// a minute.
	req, err := http.NewRequest(http.MethodPost, base+"/v1/threads/"+thread["id"].(string)+"/turns",
		strings.NewReader(`{"message":"/slow 200 `+strings.Repeat("word ", 300)+`"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && sc.Text() != "event: text.delta" {
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		t.Fatalf("chatd exited (%v) on the first signal while a turn was running", err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		var exitErr *exec.ExitError
		require.True(t, errors.As(err, &exitErr), "chatd exited cleanly: %v", err)
		ws := exitErr.Sys().(syscall.WaitStatus)
		assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGTERM, "want death by SIGTERM, got %v", ws)
	case <-time.After(patience):
		t.Fatal("chatd did not exit on the second signal")
	}
}
