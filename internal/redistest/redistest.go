// Package redistest starts throwaway redis-server processes for tests: each
// on a free loopback port, without persistence, in its own temporary
// directory, stopped when the test ends — a plain server (Start) or a
// one-node Cluster (StartCluster). Tests never touch a Redis they did not
// start.
//
// When redis-server is not on PATH it is installed with apt-get if the tests
// run as root on a system that has it; otherwise the test is skipped — except
// when the environment has CI=true, where a missing Redis fails the test, so
// Redis tests are never silently skipped in CI.
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 10 * time.Second

// Server is one redis-server process the tests started.
type Server struct {
	bin     string
	dir     string
	port    int
	cluster bool
	busPort int // cluster bus port, when cluster

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of redis-server; done is closed when it has exited.
type process struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
}

var (
	installOnce sync.Once
	installErr  error
)

// Start starts a redis-server on a free 127.0.0.1 port and stops it when tb
// ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, false)
}

// StartCluster starts a redis-server in cluster mode that alone serves all
// 16384 slots: a one-node Cluster, so tests can run a ClusterClient, with its
// slot routing and CROSSSLOT checks, against a real server.
func StartCluster(tb testing.TB) *Server {
	tb.Helper()
	s := start(tb, true)
	if _, err := command(s.Addr(), "CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
		tb.Fatalf("redistest: assign cluster slots: %v", err)
	}
	deadline := time.Now().Add(startTimeout)
	for {
		info, err := command(s.Addr(), "CLUSTER", "INFO")
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: cluster did not become ready: %v %s", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func start(tb testing.TB, cluster bool) *Server {
	tb.Helper()
	bin := findRedis(tb)
	s := &Server{bin: bin, dir: tb.TempDir(), cluster: cluster}
	tb.Cleanup(func() { s.stop() })

	var lastErr error
	for range 10 {
		port, err := freePort()
		if err != nil {
			tb.Fatalf("redistest: find a free port: %v", err)
		}
		s.port, s.busPort = port, 0
		if lastErr = s.start(); lastErr == nil {
			return s
		}
	}
	tb.Fatalf("redistest: start redis-server: %v", lastErr)
	return nil
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns a redis:// URL for database 0 of the server.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop shuts the server down, for tests of an outage. Its data is lost.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	s.stop()
}

// Restart starts the server again on the same port, after Stop.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.stop()
	// The port was ours a moment ago; something else may briefly hold it
	// (or the old socket may linger), so retry for a while.
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: restart redis-server on port %d: %v", s.port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func findRedis(tb testing.TB) string {
	tb.Helper()
	if bin, err := exec.LookPath("redis-server"); err == nil {
		return bin
	}
	installOnce.Do(func() { installErr = install() })
	if bin, err := exec.LookPath("redis-server"); err == nil {
		return bin
	}
	msg := "redistest: redis-server is not on PATH"
	if installErr != nil {
		msg += " and installing it failed: " + installErr.Error()
	}
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg + " (set CI=true to make this a failure)")
	return ""
}

// install installs redis-server with apt-get, when that is possible.
func install() error {
	if os.Geteuid() != 0 {
		return errors.New("not running as root")
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil {
		return errors.New("apt-get not available")
	}
	for _, args := range [][]string{{"update"}, {"install", "-y", "redis-server"}} {
		cmd := exec.Command(apt, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, lastLines(out, 5))
		}
	}
	return nil
}

// freePort asks the kernel for a free loopback port. Another process may take
// it before redis-server binds it; Start retries with a new one if so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	log := &syncBuffer{}
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
	}
	if s.cluster {
		// The cluster bus needs a port of its own (by default port+10000,
		// which may be taken or out of range); nodes.conf in dir keeps the
		// slot assignment across Restart.
		if s.busPort == 0 {
			port, err := freePort()
			if err != nil {
				return err
			}
			s.busPort = port
		}
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(s.busPort))
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()

	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("redis-server exited (%v): %s", p.err, lastLines(log.Bytes(), 5))
		default:
		}
		if ping(s.Addr()) == nil {
			s.mu.Lock()
			s.proc = p
			s.mu.Unlock()
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-p.done
			return fmt.Errorf("redis-server did not answer PING within %s: %s", startTimeout, lastLines(log.Bytes(), 5))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	// SIGTERM makes redis-server shut down at once; with persistence off it
	// writes nothing.
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(startTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// ping checks that the server at addr answers PING.
func ping(addr string) error {
	reply, err := command(addr, "PING")
	if err != nil {
		return err
	}
	if reply != "PONG" {
		return fmt.Errorf("unexpected reply %q", reply)
	}
	return nil
}

// command sends one command in the inline protocol (arguments must not
// contain spaces) and returns its status or bulk-string reply.
func command(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte(strings.Join(args, " ") + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "+"):
		return line[1:], nil
	case strings.HasPrefix(line, "-"):
		return "", errors.New(line[1:])
	case strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("unexpected reply %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// syncBuffer collects a server's output, written from the process's output
// copier and read by failure messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
