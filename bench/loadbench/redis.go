package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a throw-away redis-server on a free loopback port, with
// persistence off and its working directory in a temporary folder; Stop
// kills it and removes the folder.
type redisServer struct {
	cmd  *exec.Cmd
	dir  string
	addr string
	done chan struct{}
}

// redisStartAttempts bounds retries when the free port found is taken by
// someone else before redis-server binds it.
const redisStartAttempts = 3

// startRedis launches redis-server (bin) and waits until it answers PING.
func startRedis(ctx context.Context, bin string) (*redisServer, error) {
	var lastErr error
	for range redisStartAttempts {
		srv, err := tryStartRedis(ctx, bin)
		if err == nil {
			return srv, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func tryStartRedis(ctx context.Context, bin string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chatd-loadbench-redis-")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "redis.log")
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--protected-mode", "yes",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--logfile", logPath,
		"--daemonize", "no",
	)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	srv := &redisServer{cmd: cmd, dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(srv.done) }()
	if err := srv.waitReady(ctx, 10*time.Second); err != nil {
		log, _ := os.ReadFile(logPath)
		srv.Stop()
		return nil, fmt.Errorf("redis-server on %s did not become ready: %w\n%s", srv.addr, err, log)
	}
	return srv, nil
}

// waitReady polls PING until it answers, the process exits, or limit passes.
func (s *redisServer) waitReady(ctx context.Context, limit time.Duration) error {
	client := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer client.Close()
	deadline := time.Now().Add(limit)
	for {
		pingCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := client.Ping(pingCtx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return errors.New("redis-server exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// Stop kills the server, waits for it to exit, and removes its directory.
func (s *redisServer) Stop() {
	_ = s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
	_ = os.RemoveAll(s.dir)
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// findRedisServer returns the redis-server binary to run: bin when given,
// else the one on PATH, installing it through apt-get first when it is
// missing and the benchmark runs as root (as scripts/ensure-redis.sh does).
func findRedisServer(ctx context.Context, bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	if path, err := exec.LookPath("redis-server"); err == nil {
		return path, nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		return "", errors.New("redis-server is missing: install it (e.g. apt-get install redis-server) or pass -redis-server")
	}
	installCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "redis-server"}} {
		cmd := exec.CommandContext(installCtx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("installing redis-server: apt-get %v: %w", args, err)
		}
	}
	return exec.LookPath("redis-server")
}
