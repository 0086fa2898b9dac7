package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ClusterOptions says how LaunchCluster builds a Cluster. Zero fields take
// the defaults in their comments.
type ClusterOptions struct {
	// Bin is the redis-server binary; empty means FindServer's choice.
	Bin string
	// Masters is the number of masters (3), which share the 16384 slots
	// evenly; each has one replica.
	Masters int
	// NodeTimeout is cluster-node-timeout (5s): how long a master may be
	// unreachable before its replica takes over. Tests of a failover make
	// it short; the default is long enough that a busy machine does not
	// fail a healthy master over.
	NodeTimeout time.Duration
	// Args are more redis-server arguments for every node.
	Args []string
}

// Cluster is a Redis Cluster of masters with one replica each, every node a
// redis-server on a free loopback port.
type Cluster struct {
	dir      string
	masters  int
	nodes    []*Process // the masters, then their replicas in the same order
	hostPort []string
}

// LaunchCluster starts a Cluster and returns once every node reports the
// cluster ready, every slot served and every replica in sync. ctx bounds
// only the start.
func LaunchCluster(ctx context.Context, opts ClusterOptions) (_ *Cluster, err error) {
	bin, err := FindServer(ctx, opts.Bin)
	if err != nil {
		return nil, err
	}
	if opts.Masters <= 0 {
		opts.Masters = 3
	}
	if opts.NodeTimeout <= 0 {
		opts.NodeTimeout = 5 * time.Second
	}
	dir, err := os.MkdirTemp("", "chatd-redis-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, masters: opts.Masters}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	args := append([]string{
		"--cluster-node-timeout", strconv.FormatInt(opts.NodeTimeout.Milliseconds(), 10),
		// A replica syncs at once instead of waiting for more replicas to
		// share one transfer.
		"--repl-diskless-sync-delay", "0",
	}, opts.Args...)
	for i := range 2 * opts.Masters {
		nodeDir := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(nodeDir, 0o700); err != nil {
			return nil, err
		}
		p, err := Launch(ctx, Options{Bin: bin, Dir: nodeDir, Args: args, clusterNode: true})
		if err != nil {
			return nil, fmt.Errorf("cluster node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, p)
	}
	if err := c.form(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// form joins the fresh nodes into one cluster, as redis-cli --cluster create
// would: distinct config epochs, slots shared by the masters, every node
// met, then each replica attached to its master.
func (c *Cluster) form(ctx context.Context) error {
	for i, p := range c.nodes {
		if _, err := command(ctx, p.Addr(), "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return fmt.Errorf("set config epoch: %w", err)
		}
	}
	for i := range c.masters {
		lo, hi := i*16384/c.masters, (i+1)*16384/c.masters-1
		if _, err := command(ctx, c.nodes[i].Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fmt.Errorf("assign slots: %w", err)
		}
	}
	for _, p := range c.nodes[1:] {
		if _, err := command(ctx, c.nodes[0].Addr(), "CLUSTER", "MEET", "127.0.0.1",
			strconv.Itoa(p.port), strconv.Itoa(p.busPort)); err != nil {
			return fmt.Errorf("cluster meet: %w", err)
		}
	}
	if err := waitFor(ctx, "every node to know every other", func() (string, error) {
		for _, p := range c.nodes {
			nodes, err := clusterNodes(ctx, p.Addr())
			if err != nil {
				return p.Addr() + ": " + err.Error(), nil
			}
			if len(nodes) != len(c.nodes) {
				return fmt.Sprintf("%s knows %d nodes", p.Addr(), len(nodes)), nil
			}
			for _, n := range nodes {
				if n.has("handshake") || n.has("noaddr") || !n.connected {
					return fmt.Sprintf("%s sees port %d as %v", p.Addr(), n.port, n.flags), nil
				}
			}
		}
		return "", nil
	}); err != nil {
		return err
	}
	for i := range c.masters {
		id, err := command(ctx, c.nodes[i].Addr(), "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		if _, err := command(ctx, c.nodes[c.masters+i].Addr(), "CLUSTER", "REPLICATE", id); err != nil {
			return fmt.Errorf("attach replica: %w", err)
		}
	}
	return c.WaitHealthy(ctx)
}

// WaitHealthy waits until every running node reports the cluster ok and
// knows of one master per slot range, each with a replica in sync: after a
// failover, once the failed node is back as the new master's replica.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return waitFor(ctx, "the cluster to be healthy", func() (string, error) {
		for _, p := range c.nodes {
			if reason := c.nodeHealth(ctx, p); reason != "" {
				return p.Addr() + ": " + reason, nil
			}
		}
		return "", nil
	})
}

// nodeHealth returns why p does not see a healthy cluster, or "".
func (c *Cluster) nodeHealth(ctx context.Context, p *Process) string {
	info, err := command(ctx, p.Addr(), "CLUSTER", "INFO")
	if err != nil {
		return err.Error()
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return "cluster state is not ok"
	}
	nodes, err := clusterNodes(ctx, p.Addr())
	if err != nil {
		return err.Error()
	}
	masters, replicas := 0, 0
	for _, n := range nodes {
		switch {
		case n.has("fail") || n.has("fail?") || !n.connected:
			return fmt.Sprintf("port %d is %v", n.port, n.flags)
		case n.has("master") && len(n.slots) > 0:
			masters++
		case n.has("slave"):
			replicas++
		}
	}
	if masters != c.masters || replicas != c.masters {
		return fmt.Sprintf("%d masters and %d replicas", masters, replicas)
	}
	repl, err := command(ctx, p.Addr(), "INFO", "replication")
	if err != nil {
		return err.Error()
	}
	if strings.Contains(repl, "role:master") && !strings.Contains(repl, "state=online") {
		return "no replica in sync"
	}
	if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
		return "replica not in sync"
	}
	return ""
}

// Addrs returns every node's host:port, masters first.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, p := range c.nodes {
		out[i] = p.Addr()
	}
	return out
}

// URL returns the redis:// URL chatd takes for this Cluster: every node as a
// seed, comma-separated.
func (c *Cluster) URL() string { return "redis://" + strings.Join(c.Addrs(), ",") }

// Nodes returns the nodes, the masters first and then their replicas in the
// same order, as started (a failover swaps the roles, not the order).
func (c *Cluster) Nodes() []*Process { return c.nodes }

// MasterOf returns the node that serves key's slot as master now.
func (c *Cluster) MasterOf(ctx context.Context, key string) (*Process, error) {
	var lastErr error
	for _, p := range c.nodes {
		slot, err := do(ctx, p.Addr(), "CLUSTER", "KEYSLOT", key)
		if err != nil {
			lastErr = err
			continue
		}
		nodes, err := clusterNodes(ctx, p.Addr())
		if err != nil {
			lastErr = err
			continue
		}
		for _, n := range nodes {
			if !n.has("master") || n.has("fail") || !n.serves(int(slot.(int64))) {
				continue
			}
			for _, q := range c.nodes {
				if q.port == n.port {
					return q, nil
				}
			}
		}
		lastErr = fmt.Errorf("no master serves the slot of %q", key)
	}
	return nil, lastErr
}

// Stop stops every node and removes their directories.
func (c *Cluster) Stop() {
	for _, p := range c.nodes {
		p.Stop()
	}
	_ = os.RemoveAll(c.dir)
}

// StartCluster starts a Cluster of three masters with a replica each and
// stops it when tb ends. A test that kills nodes should start its own with
// LaunchCluster and a short NodeTimeout.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	return mustLaunch(tb, func(ctx context.Context, bin string) (*Cluster, error) {
		return LaunchCluster(ctx, ClusterOptions{Bin: bin})
	}, (*Cluster).Stop)
}

// mustLaunch finds the binary (skipping, or failing under CI=true, without
// one), launches a set-up and stops it when tb ends.
func mustLaunch[T any](tb testing.TB, launch func(ctx context.Context, bin string) (T, error), stop func(T)) T {
	tb.Helper()
	bin := mustFindServer(tb)
	v, err := launch(tb.Context(), bin)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() { stop(v) })
	return v
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	port      int
	flags     []string
	connected bool
	slots     [][2]int
}

func (n clusterNode) has(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

func (n clusterNode) serves(slot int) bool {
	for _, r := range n.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// clusterNodes parses CLUSTER NODES as addr sees it.
func clusterNodes(ctx context.Context, addr string) ([]clusterNode, error) {
	out, err := command(ctx, addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var nodes []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("cluster nodes: short line %q", line)
		}
		n := clusterNode{flags: strings.Split(f[2], ","), connected: f[7] == "connected"}
		hostPort, _, _ := strings.Cut(f[1], "@")
		if i := strings.LastIndex(hostPort, ":"); i >= 0 {
			n.port, _ = strconv.Atoi(hostPort[i+1:])
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") { // a slot being migrated
				continue
			}
			lo, hi, found := strings.Cut(s, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if found {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("cluster nodes: bad slots %q", s)
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// formTimeout bounds how long a Cluster or Sentinel set-up may take to
// become ready: gossip and replication take several of their periods, each
// longer on a loaded machine.
const formTimeout = 60 * time.Second

// waitFor polls cond until it returns "" (ready), an error, or formTimeout
// passes; cond's other answers say what is not ready yet.
func waitFor(ctx context.Context, what string, cond func() (string, error)) error {
	deadline := time.Now().Add(formTimeout)
	for {
		reason, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if reason == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not within %s: %s", what, formTimeout, reason)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

var errNoMaster = errors.New("no master known")
