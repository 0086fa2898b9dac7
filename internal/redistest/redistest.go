// Package redistest starts throwaway redis-server processes for tests: each
// on a free loopback port, without persistence, in its own temporary
// directory, stopped when the test ends. Tests never touch a Redis they did
// not start.
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
	bin  string
	dir  string
	port int

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
	bin := findRedis(tb)
	s := &Server{bin: bin, dir: tb.TempDir()}
	tb.Cleanup(func() { s.stop() })

	var lastErr error
	for range 10 {
		port, err := freePort()
		if err != nil {
			tb.Fatalf("redistest: find a free port: %v", err)
		}
		s.port = port
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
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
	)
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

// ping sends one PING in the inline protocol and expects +PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
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
