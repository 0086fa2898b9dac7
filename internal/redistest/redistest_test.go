package redistest_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
)

// send sends one inline command to addr and returns its status line or the
// body of its bulk reply, or the error.
func send(tb testing.TB, addr, cmd string) (string, error) {
	tb.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	require.NoError(tb, conn.SetDeadline(time.Now().Add(time.Second)))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSpace(line)
	n, err := strconv.Atoi(strings.TrimPrefix(line, "$"))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 {
		return line, nil
	}
	body := make([]byte, n)
	_, err = io.ReadFull(r, body)
	return string(body), err
}

// mustFindServer returns the redis-server binary, skipping the test when
// there is none (and failing it under CI=true, as Start does).
func mustFindServer(tb testing.TB) string {
	tb.Helper()
	bin, err := redistest.FindServer(tb.Context(), "")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal(err)
		}
		tb.Skip(err)
	}
	return bin
}

// newTestProcess launches a redis-server with opts and stops it when tb
// ends.
func newTestProcess(tb testing.TB, opts redistest.Options) *redistest.Process {
	tb.Helper()
	opts.Bin = mustFindServer(tb)
	p, err := redistest.Launch(tb.Context(), opts)
	require.NoError(tb, err)
	tb.Cleanup(p.Stop)
	return p
}

// mustPing sends PING to addr and returns the reply line, or the error.
func mustPing(tb testing.TB, addr string) (string, error) {
	tb.Helper()
	return send(tb, addr, "PING")
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
	c := redistest.StartCluster(t)
	require.Len(t, c.Nodes(), 6)
	assert.Equal(t, "redis://"+strings.Join(c.Addrs(), ","), c.URL())
	for i, p := range c.Nodes() {
		info, err := send(t, p.Addr(), "CLUSTER INFO")
		require.NoError(t, err)
		assert.Contains(t, info, "cluster_state:ok")
		assert.Contains(t, info, "cluster_known_nodes:6")
		repl, err := send(t, p.Addr(), "INFO replication")
		require.NoError(t, err)
		if i < 3 {
			assert.Contains(t, repl, "role:master")
			assert.Contains(t, repl, "connected_slaves:1")
		} else {
			assert.Contains(t, repl, "role:slave")
			assert.Contains(t, repl, "master_link_status:up")
		}
	}
	// A key's master is one of the three masters.
	m, err := c.MasterOf(t.Context(), "chatd:{x}:thread")
	require.NoError(t, err)
	assert.Contains(t, c.Addrs()[:3], m.Addr())
}

// TestClusterFailover kills a master: its replica takes over, and the
// killed node, restarted, comes back as the new master's replica.
func TestClusterFailover(t *testing.T) {
	c, err := redistest.LaunchCluster(t.Context(), redistest.ClusterOptions{Bin: mustFindServer(t), NodeTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	old, err := c.MasterOf(t.Context(), "k")
	require.NoError(t, err)
	old.Kill()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		m, err := c.MasterOf(t.Context(), "k")
		require.NoError(ct, err)
		assert.NotEqual(ct, old.Addr(), m.Addr())
	}, 30*time.Second, 50*time.Millisecond)
	require.NoError(t, old.Restart(t.Context()))
	require.NoError(t, c.WaitHealthy(t.Context()))
	repl, err := send(t, old.Addr(), "INFO replication")
	require.NoError(t, err)
	assert.Contains(t, repl, "role:slave")
}

func TestStartSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	assert.Equal(t, "redis://"+strings.Join(s.SentinelAddrs(), ",")+"/0?master_name="+redistest.MasterName, s.URL())
	m, err := s.Master(t.Context())
	require.NoError(t, err)
	assert.Equal(t, s.Servers()[0].Addr(), m.Addr())
	repl, err := send(t, s.Servers()[1].Addr(), "INFO replication")
	require.NoError(t, err)
	assert.Contains(t, repl, "master_link_status:up")
}

// TestSentinelFailover kills the master: the Sentinels promote the replica,
// and the old master, back, is made its replica.
func TestSentinelFailover(t *testing.T) {
	s, err := redistest.LaunchSentinel(t.Context(), redistest.SentinelOptions{Bin: mustFindServer(t), DownAfter: time.Second})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	old, err := s.Master(t.Context())
	require.NoError(t, err)
	old.Kill()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		m, err := s.Master(t.Context())
		require.NoError(ct, err)
		assert.NotEqual(ct, old.Addr(), m.Addr())
	}, 30*time.Second, 50*time.Millisecond)
	require.NoError(t, s.Rejoin(t.Context(), old))
	repl, err := send(t, old.Addr(), "INFO replication")
	require.NoError(t, err)
	assert.Contains(t, repl, "role:slave")
}

func TestLaunchStopRestart(t *testing.T) {
	tests := []struct {
		name    string
		cluster bool
	}{
		{name: "plain"},
		// In a temporary directory the restarted node has no nodes.conf, so
		// Restart assigns the slots again.
		{name: "cluster", cluster: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestProcess(t, redistest.Options{Cluster: tt.cluster})
			addr, dir := p.Addr(), p.Dir()
			require.NotEmpty(t, dir)
			assert.DirExists(t, dir)

			reply, err := mustPing(t, addr)
			require.NoError(t, err)
			assert.Equal(t, "+PONG", reply)

			p.Stop()
			_, err = mustPing(t, addr)
			assert.Error(t, err, "a stopped server does not answer")
			assert.NoDirExists(t, dir, "Stop removes the temporary directory Launch made")
			assert.Empty(t, p.Dir())
			p.Stop() // a second Stop does nothing

			require.NoError(t, p.Restart(t.Context()))
			assert.Equal(t, addr, p.Addr(), "the restarted server keeps its address")
			reply, err = mustPing(t, addr)
			require.NoError(t, err)
			assert.Equal(t, "+PONG", reply)
			assert.DirExists(t, p.Dir())
			if tt.cluster {
				info, err := send(t, addr, "CLUSTER INFO")
				require.NoError(t, err)
				assert.Contains(t, info, "cluster_state:ok")
			}
		})
	}
}

func TestLaunchKeepsGivenDir(t *testing.T) {
	dir := t.TempDir()
	p := newTestProcess(t, redistest.Options{Dir: dir})
	assert.Equal(t, dir, p.Dir())
	p.Stop()
	assert.DirExists(t, dir, "Stop leaves a directory it did not make")
}

func TestLaunchFailure(t *testing.T) {
	falseBin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false binary")
	}
	tests := []struct {
		name string
		bin  string
		want string
	}{
		{name: "missing binary", bin: filepath.Join(t.TempDir(), "no-such-redis-server"), want: "no such file"},
		{name: "exits at once", bin: falseBin, want: "redis-server exited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := redistest.Launch(t.Context(), redistest.Options{Bin: tt.bin})
			require.Error(t, err)
			assert.Nil(t, p)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestLaunchCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p, err := redistest.Launch(ctx, redistest.Options{Bin: mustFindServer(t)})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, p)
}

func TestFindServerGivenBin(t *testing.T) {
	got, err := redistest.FindServer(t.Context(), "/opt/redis/bin/redis-server")
	require.NoError(t, err)
	assert.Equal(t, "/opt/redis/bin/redis-server", got, "an explicit binary is used as given")
}
