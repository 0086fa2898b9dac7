// Package redistest starts throwaway redis-server processes: each on a free
// loopback port, without persistence, in a directory of its own. Tests use
// Start (a plain server), StartCluster (a Cluster of three masters with a
// replica each) and StartSentinel (a master, its replica and three
// Sentinels), which stop everything when the test ends; programs such as the
// load benchmark, and tests that share one set-up or kill its nodes, use
// Launch, LaunchCluster and LaunchSentinel and stop what they started
// themselves. Nobody touches a Redis they did not start.
//
// All of them run the same redis-server binary. FindServer picks it. When
// redis-server is not on PATH it installs it with apt-get if running as root
// on a system that has it. When that fails, the Start functions skip the test — except when the
// environment has CI=true, where a missing Redis fails the test, so Redis
// tests are never silently skipped in CI.
//
// On Linux the kernel kills each server when the program that started it
// dies without stopping it (a panic, a test timeout, a SIGKILL), so no
// server outlives its program.
package redistest

import (
	"bufio"
	"bytes"
	"context"
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

const (
	// startTimeout bounds how long a server may take to answer PING (and a
	// cluster to report itself ready), and how long Restart retries a port
	// that is still held.
	startTimeout = 10 * time.Second
	// launchAttempts bounds the retries, each on a new port, when another
	// process takes the free port found before redis-server binds it.
	launchAttempts = 10
	// installTimeout bounds installing redis-server with apt-get.
	installTimeout = 3 * time.Minute
)

var (
	installOnce sync.Once
	installErr  error
)

// FindServer returns the redis-server binary to run: bin when it is not
// empty, else the one on PATH, installed first with apt-get when it is
// missing and the program runs as root on a system that has apt-get. The
// install is tried once per process.
func FindServer(ctx context.Context, bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	if path, err := exec.LookPath("redis-server"); err == nil {
		return path, nil
	}
	installOnce.Do(func() { installErr = install(ctx) })
	if path, err := exec.LookPath("redis-server"); err == nil {
		return path, nil
	}
	if installErr != nil {
		return "", fmt.Errorf("redis-server is not on PATH and installing it failed: %w", installErr)
	}
	return "", errors.New("redis-server is not on PATH")
}

// install installs redis-server with apt-get, when that is possible.
func install(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return errors.New("not running as root")
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil {
		return errors.New("apt-get not available")
	}
	ctx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "redis-server"}} {
		cmd := exec.CommandContext(ctx, apt, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, lastLines(out, 5))
		}
	}
	return nil
}

// Options says how Launch starts redis-server.
type Options struct {
	// Bin is the redis-server binary; empty means FindServer's choice.
	Bin string
	// Dir is the server's working directory. Empty means a new temporary
	// directory that Stop removes, so a Restart starts in an empty one.
	Dir string
	// Cluster starts the server in cluster mode, alone serving all 16384
	// slots: a one-node Cluster, so a ClusterClient, with its slot routing
	// and CROSSSLOT checks, can run against a real server.
	Cluster bool
	// Args are more redis-server arguments ("--name", "value", …), after
	// chatd's own; a later argument overrides an earlier one.
	Args []string

	// clusterNode starts the server in cluster mode without assigning it
	// slots: a member of a Cluster that LaunchCluster builds.
	clusterNode bool
	// sentinelOf, when set, starts a Sentinel instead of a server,
	// monitoring the master of that name (sentinelSpec).
	sentinel *sentinelSpec
}

// Process is a redis-server started by Launch. Stop and Restart must not
// run at the same time.
type Process struct {
	bin         string
	ownDir      bool // dir is a temporary directory made for the server
	cluster     bool // a one-node Cluster serving every slot
	clusterNode bool // in cluster mode: cluster or a Cluster member
	sentinel    *sentinelSpec
	args        []string
	port        int
	busPort     int // cluster bus port, when in cluster mode

	mu  sync.Mutex
	dir string
	run *run // nil while stopped
}

// run is one run of redis-server; done is closed when it has exited.
type run struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
}

// Launch starts a redis-server on a free 127.0.0.1 port and returns once it
// answers PING (in cluster mode: once the cluster is ready). ctx bounds only
// the start; the server runs until Stop.
func Launch(ctx context.Context, opts Options) (*Process, error) {
	bin, err := FindServer(ctx, opts.Bin)
	if err != nil {
		return nil, err
	}
	p := &Process{bin: bin, dir: opts.Dir, ownDir: opts.Dir == "", cluster: opts.Cluster,
		clusterNode: opts.Cluster || opts.clusterNode, sentinel: opts.sentinel, args: opts.Args}
	var lastErr error
	for range launchAttempts {
		if p.port, err = freePort(); err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		p.busPort = 0
		if lastErr = p.start(ctx); lastErr == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("start redis-server: %w", lastErr)
}

// Addr returns the server's host:port.
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// Port returns the server's port.
func (p *Process) Port() int { return p.port }

// Do sends one command to the server, as Server.Do does.
func (p *Process) Do(ctx context.Context, args ...string) (any, error) {
	return do(ctx, p.Addr(), args...)
}

// Dir returns the server's working directory, "" once Stop has removed a
// temporary one.
func (p *Process) Dir() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dir
}

// Stop shuts the server down and waits for it to exit; its data is lost. A
// temporary directory made by Launch is removed. Stopping a stopped server
// does nothing.
func (p *Process) Stop() {
	p.mu.Lock()
	r := p.run
	p.run = nil
	p.mu.Unlock()
	if r != nil {
		r.stop()
	}
	p.removeDir()
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it to
// exit. Unlike Stop it keeps the directory, so a Cluster member restarted
// with Restart keeps its identity (nodes.conf).
func (p *Process) Kill() {
	p.mu.Lock()
	r := p.run
	p.run = nil
	p.mu.Unlock()
	if r != nil {
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// Restart starts the server again on the same port, after Stop or Kill.
func (p *Process) Restart(ctx context.Context) error {
	p.Kill()
	// The port was ours a moment ago; something else may briefly hold it
	// (or the old socket may linger), so retry for a while.
	deadline := time.Now().Add(startTimeout)
	for {
		err := p.start(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("restart redis-server on port %d: %w", p.port, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("restart redis-server on port %d: %w", p.port, err)
		}
	}
}

// replicaOf makes the server's next start a replica of the server on port
// of this host, instead of whatever it replicated before, that answers
// nothing from its own (empty) data until it has synced.
func (p *Process) replicaOf(port int) {
	var args []string
	for i := 0; i < len(p.args); i++ {
		if p.args[i] == "--replicaof" && i+2 < len(p.args) {
			i += 2
			continue
		}
		args = append(args, p.args[i])
	}
	p.args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(port), "--replica-serve-stale-data", "no")
}

// removeDir removes the server's directory if Launch made it.
func (p *Process) removeDir() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ownDir && p.dir != "" {
		_ = os.RemoveAll(p.dir)
		p.dir = ""
	}
}

// start runs redis-server on p.port and waits until it is ready; on failure
// nothing of the attempt is left running.
// serverArgs are redis-server's arguments for p.
func (p *Process) serverArgs() ([]string, error) {
	args := []string{
		"--port", strconv.Itoa(p.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "yes",
		"--save", "",
		"--appendonly", "no",
		"--dir", p.Dir(),
		"--daemonize", "no",
	}
	if p.sentinel != nil {
		conf, err := p.sentinel.writeConfig(p.Dir())
		if err != nil {
			return nil, err
		}
		args = append([]string{conf, "--sentinel"}, args...)
	}
	if p.clusterNode {
		// The cluster bus needs a port of its own (by default port+10000,
		// which may be taken or out of range); nodes.conf in dir keeps the
		// slot assignment across Restart.
		if p.busPort == 0 {
			var err error
			if p.busPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(p.busPort))
	}
	args = append(args, p.args...)
	return args, nil
}

func (p *Process) start(ctx context.Context) (err error) {
	if p.ownDir && p.Dir() == "" {
		dir, err := os.MkdirTemp("", "chatd-redis-")
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.dir = dir
		p.mu.Unlock()
	}
	defer func() {
		if err != nil {
			p.removeDir()
		}
	}()
	args, err := p.serverArgs()
	if err != nil {
		return err
	}
	log := &syncBuffer{}
	cmd := exec.Command(p.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	r := &run{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	if err := p.waitReady(ctx, r); err != nil {
		r.stop()
		return err
	}
	p.mu.Lock()
	p.run = r
	p.mu.Unlock()
	return nil
}

// waitReady polls until the server answers PING and, in cluster mode, serves
// every slot.
func (p *Process) waitReady(ctx context.Context, r *run) error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-r.done:
			return fmt.Errorf("redis-server exited (%v): %s", r.err, lastLines(r.log.Bytes(), 5))
		default:
		}
		err := ping(ctx, p.Addr())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server did not answer PING within %s: %w: %s", startTimeout, err, lastLines(r.log.Bytes(), 5))
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	if !p.cluster {
		return nil
	}
	// A fresh node serves no slots; one restarted in the same directory
	// has them back from nodes.conf.
	info, err := command(ctx, p.Addr(), "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_slots_assigned:16384") {
		if _, err := command(ctx, p.Addr(), "CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
			return fmt.Errorf("assign cluster slots: %w", err)
		}
	}
	for {
		info, err := command(ctx, p.Addr(), "CLUSTER", "INFO")
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster did not become ready: %v %s", err, info)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// stop ends the run and waits for it to exit.
func (r *run) stop() {
	// SIGTERM makes redis-server shut down at once; with persistence off it
	// writes nothing.
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(startTimeout):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// Server is one redis-server process a test started.
type Server struct {
	p *Process
}

// Start starts a redis-server on a free 127.0.0.1 port and stops it when tb
// ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := mustFindServer(tb)
	p, err := Launch(tb.Context(), Options{Bin: bin, Dir: tb.TempDir()})
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(p.Stop)
	return &Server{p: p}
}

// mustFindServer returns the redis-server binary, skipping the test when
// there is none — or failing it when the environment has CI=true.
func mustFindServer(tb testing.TB) string {
	tb.Helper()
	bin, err := FindServer(tb.Context(), "")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redistest: %v", err)
		}
		tb.Skipf("redistest: %v (set CI=true to make this a failure)", err)
	}
	return bin
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.p.Addr() }

// Do sends one command to the server and returns its reply: a string, an
// int64, nil or a []any of those; an error reply is the error. Tests use it
// to reach behind the code under test, as a failover or an operator would.
func (s *Server) Do(ctx context.Context, args ...string) (any, error) {
	return do(ctx, s.Addr(), args...)
}

// URL returns a redis:// URL for database 0 of the server.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop shuts the server down, for tests of an outage. Its data is lost.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	s.p.Stop()
}

// Restart starts the server again on the same port, after Stop.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if err := s.p.Restart(tb.Context()); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
}

// freePort asks the kernel for a free loopback port. Another process may take
// it before redis-server binds it; Launch retries with a new one if so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ping checks that the server at addr answers PING.
func ping(ctx context.Context, addr string) error {
	reply, err := command(ctx, addr, "PING")
	if err != nil {
		return err
	}
	if reply != "PONG" {
		return fmt.Errorf("unexpected reply %q", reply)
	}
	return nil
}

// command sends one command and returns its status or bulk-string reply.
func command(ctx context.Context, addr string, args ...string) (string, error) {
	reply, err := do(ctx, addr, args...)
	if err != nil {
		return "", err
	}
	s, ok := reply.(string)
	if !ok {
		return "", fmt.Errorf("%s: unexpected reply %v", args[0], reply)
	}
	return s, nil
}

// do sends one command and returns its reply: a string (status or bulk), an
// int64, nil, or a []any of those; an error reply is returned as the error.
func do(ctx context.Context, addr string, args ...string) (any, error) {
	// Generous: a loaded machine can keep a healthy server from answering
	// for a while.
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(conn))
}

// readReply reads one RESP2 reply.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, errors.New(line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, fmt.Errorf("unexpected reply %q", line)
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, fmt.Errorf("unexpected reply %q", line)
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			// An error inside an array is an element, not the reply's error.
			v, err := readReply(r)
			if err != nil && errors.Is(err, io.EOF) {
				return nil, err
			}
			if err != nil {
				v = err
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
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

// Work is what a server has done since it started: the commands it ran
// (those scripts call included, INFO not) and the bytes it sent to its
// clients. The difference of two readings is the store work of what ran
// between them, which tests compare instead of timing it.
type Work struct {
	Commands   int64
	ReplyBytes int64
}

// Sub returns the work done between earlier and w.
func (w Work) Sub(earlier Work) Work {
	return Work{Commands: w.Commands - earlier.Commands, ReplyBytes: w.ReplyBytes - earlier.ReplyBytes}
}

// Work reads the server's counts of the work it has done.
func (s *Server) Work(tb testing.TB) Work {
	tb.Helper()
	w, err := ReadWork(tb.Context(), s.Addr())
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return w
}

// ReadWork reads the counts of the work done by the server at addr, from
// INFO commandstats and stats.
func ReadWork(ctx context.Context, addr string) (Work, error) {
	reply, err := do(ctx, addr, "INFO", "commandstats", "stats")
	if err != nil {
		return Work{}, err
	}
	info, ok := reply.(string)
	if !ok {
		return Work{}, fmt.Errorf("INFO replied %T", reply)
	}
	var w Work
	for _, line := range strings.Split(info, "\r\n") {
		name, stats, ok := strings.Cut(line, ":")
		switch {
		case !ok:
		case name == "total_net_output_bytes":
			if w.ReplyBytes, err = strconv.ParseInt(stats, 10, 64); err != nil {
				return Work{}, fmt.Errorf("INFO line %q: %w", line, err)
			}
		case strings.HasPrefix(name, "cmdstat_") && name != "cmdstat_info":
			calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
			n, err := strconv.ParseInt(calls, 10, 64)
			if err != nil {
				return Work{}, fmt.Errorf("INFO line %q: %w", line, err)
			}
			w.Commands += n
		}
	}
	return w, nil
}
