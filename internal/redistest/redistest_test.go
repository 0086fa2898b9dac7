package redistest_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
)

// mustPing sends PING to addr and returns the reply line, or the error.
func mustPing(tb testing.TB, addr string) (string, error) {
	tb.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	require.NoError(tb, conn.SetDeadline(time.Now().Add(time.Second)))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

func TestStartStopRestart(t *testing.T) {
	srv := redistest.Start(t)
	host, _, err := net.SplitHostPort(srv.Addr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.Equal(t, "redis://"+srv.Addr()+"/0", srv.URL())

	reply, err := mustPing(t, srv.Addr())
	require.NoError(t, err)
	assert.Equal(t, "+PONG", reply)

	srv.Stop(t)
	_, err = mustPing(t, srv.Addr())
	assert.Error(t, err, "a stopped server does not answer")

	srv.Restart(t)
	reply, err = mustPing(t, srv.Addr())
	require.NoError(t, err)
	assert.Equal(t, "+PONG", reply, "the restarted server answers on the same address")
}

func TestServersAreSeparate(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	assert.NotEqual(t, a.Addr(), b.Addr())
	assert.NotEqual(t, "127.0.0.1:6379", a.Addr())
}

func TestStartCluster(t *testing.T) {
	srv := redistest.StartCluster(t)
	reply, err := mustPing(t, srv.Addr())
	require.NoError(t, err)
	assert.Equal(t, "+PONG", reply)
}
