package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MasterName is the name the Sentinels of a Sentinel set-up monitor.
const MasterName = "chatd"

// SentinelOptions says how LaunchSentinel builds a Sentinel set-up. Zero
// fields take the defaults in their comments.
type SentinelOptions struct {
	// Bin is the redis-server binary; empty means FindServer's choice.
	Bin string
	// DownAfter is down-after-milliseconds (5s): how long the master may
	// be unreachable before the Sentinels fail it over. Tests of a
	// failover make it short; the default is long enough that a busy
	// machine does not fail a healthy master over.
	DownAfter time.Duration
	// Args are more redis-server arguments for the master and replica.
	Args []string
}

// Sentinel is a master, its replica and three Sentinels monitoring it, each
// a redis-server on a free loopback port.
type Sentinel struct {
	dir       string
	servers   []*Process // the first master, then its replica
	sentinels []*Process
}

// sentinelSpec is what a Sentinel process monitors.
type sentinelSpec struct {
	masterPort int
	downAfter  time.Duration
}

// writeConfig writes the Sentinel's configuration file into dir, unless a
// previous run left one there: Sentinel rewrites it with what it learned
// (the current master, the other Sentinels), which a restart must keep.
// failover-timeout is long: a short one has the Sentinels start another
// failover before the first has settled.
func (s *sentinelSpec) writeConfig(dir string) (string, error) {
	path := filepath.Join(dir, "sentinel.conf")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	conf := fmt.Sprintf(`sentinel monitor %[1]s 127.0.0.1 %[2]d 2
sentinel down-after-milliseconds %[1]s %[3]d
sentinel failover-timeout %[1]s 10000
sentinel parallel-syncs %[1]s 1
`, MasterName, s.masterPort, s.downAfter.Milliseconds())
	return path, os.WriteFile(path, []byte(conf), 0o600)
}

// LaunchSentinel starts a master, a replica in sync with it and three
// Sentinels, and returns once every Sentinel knows the replica and the other
// two Sentinels, so it could fail the master over. ctx bounds only the
// start.
func LaunchSentinel(ctx context.Context, opts SentinelOptions) (_ *Sentinel, err error) {
	bin, err := FindServer(ctx, opts.Bin)
	if err != nil {
		return nil, err
	}
	if opts.DownAfter <= 0 {
		opts.DownAfter = 5 * time.Second
	}
	dir, err := os.MkdirTemp("", "chatd-redis-sentinel-")
	if err != nil {
		return nil, err
	}
	s := &Sentinel{dir: dir}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	args := append([]string{"--repl-diskless-sync-delay", "0"}, opts.Args...)
	master, err := s.launchPair(ctx, bin, args)
	if err != nil {
		return nil, err
	}
	spec := &sentinelSpec{masterPort: master.port, downAfter: opts.DownAfter}
	for i := range 3 {
		d, err := s.subdir("sentinel" + strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		p, err := Launch(ctx, Options{Bin: bin, Dir: d, sentinel: spec})
		if err != nil {
			return nil, fmt.Errorf("sentinel %d: %w", i, err)
		}
		s.sentinels = append(s.sentinels, p)
	}
	if err := s.WaitHealthy(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// subdir makes a directory of the set-up's own.
func (s *Sentinel) subdir(name string) (string, error) {
	d := filepath.Join(s.dir, name)
	return d, os.Mkdir(d, 0o700)
}

// launchPair starts the master and its replica, and waits for the replica
// to sync.
func (s *Sentinel) launchPair(ctx context.Context, bin string, args []string) (*Process, error) {
	masterDir, err := s.subdir("master")
	if err != nil {
		return nil, err
	}
	master, err := Launch(ctx, Options{Bin: bin, Dir: masterDir, Args: args})
	if err != nil {
		return nil, fmt.Errorf("master: %w", err)
	}
	s.servers = append(s.servers, master)
	replicaDir, err := s.subdir("replica")
	if err != nil {
		return nil, err
	}
	replica, err := Launch(ctx, Options{Bin: bin, Dir: replicaDir,
		Args: append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(master.port)}, args...)})
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	s.servers = append(s.servers, replica)
	return master, waitFor(ctx, "the replica to sync", func() (string, error) {
		info, err := command(ctx, master.Addr(), "INFO", "replication")
		if err != nil {
			return err.Error(), nil
		}
		if !strings.Contains(info, "state=online") {
			return "replica not online", nil
		}
		return "", nil
	})
}

// WaitHealthy waits until every running Sentinel agrees on the master, knows
// the other Sentinels and a replica of it in sync: after a failover, once the
// failed master is back as the new one's replica.
func (s *Sentinel) WaitHealthy(ctx context.Context) error {
	return waitFor(ctx, "the sentinels to be ready", func() (string, error) {
		master := ""
		for _, p := range s.sentinels {
			addr, err := sentinelMaster(ctx, p.Addr())
			if err != nil {
				return "sentinel " + p.Addr() + ": " + err.Error(), nil
			}
			if master != "" && addr != master {
				return "sentinels disagree on the master", nil
			}
			master = addr
			others, err := do(ctx, p.Addr(), "SENTINEL", "SENTINELS", MasterName)
			if err != nil {
				return "sentinel " + p.Addr() + ": " + err.Error(), nil
			}
			if list, _ := others.([]any); len(list) != len(s.sentinels)-1 {
				return fmt.Sprintf("sentinel %s knows %d others", p.Addr(), len(list)), nil
			}
			replicas, err := do(ctx, p.Addr(), "SENTINEL", "REPLICAS", MasterName)
			if err != nil {
				return "sentinel " + p.Addr() + ": " + err.Error(), nil
			}
			if !hasLiveReplica(replicas) {
				return fmt.Sprintf("sentinel %s knows no live replica: %v", p.Addr(), replicas), nil
			}
		}
		info, err := command(ctx, master, "INFO", "replication")
		switch {
		case err != nil:
			return "master " + master + ": " + err.Error(), nil
		case !strings.Contains(info, "role:master"):
			return "master " + master + " is not a master", nil
		case !strings.Contains(info, "state=online"):
			return "master " + master + " has no replica in sync", nil
		}
		return "", nil
	})
}

// hasLiveReplica reports whether a SENTINEL REPLICAS reply lists a replica
// that is neither down nor disconnected.
func hasLiveReplica(reply any) bool {
	list, _ := reply.([]any)
	for _, r := range list {
		fields, _ := r.([]any)
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "flags" {
				flags, _ := fields[i+1].(string)
				if flags == "slave" {
					return true
				}
			}
		}
	}
	return false
}

// sentinelMaster asks the Sentinel at addr for the master's host:port.
func sentinelMaster(ctx context.Context, addr string) (string, error) {
	reply, err := do(ctx, addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName)
	if err != nil {
		return "", err
	}
	hp, _ := reply.([]any)
	if len(hp) != 2 {
		return "", errNoMaster
	}
	host, _ := hp[0].(string)
	port, _ := hp[1].(string)
	return net.JoinHostPort(host, port), nil
}

// Rejoin restarts p, a server of the set-up that was stopped or killed, as
// a replica of the current master, as an operator would: the Sentinels
// would reconfigure a returning old master too, but only some seconds after
// it is back. It starts as a replica (--replicaof) rather than being told
// so once up: restarted bare, it would be an empty master at the old
// master's address until then, and a client that has not yet heard of the
// failover would find its threads gone there.
func (s *Sentinel) Rejoin(ctx context.Context, p *Process) error {
	master, err := s.Master(ctx)
	if err != nil {
		return err
	}
	p.replicaOf(master.port)
	if err := p.Restart(ctx); err != nil {
		return err
	}
	return s.WaitHealthy(ctx)
}

// SentinelAddrs returns the Sentinels' host:port.
func (s *Sentinel) SentinelAddrs() []string {
	out := make([]string, len(s.sentinels))
	for i, p := range s.sentinels {
		out[i] = p.Addr()
	}
	return out
}

// URL returns the redis:// URL chatd takes for this set-up: the Sentinels'
// addresses and the master's name.
func (s *Sentinel) URL() string {
	return "redis://" + strings.Join(s.SentinelAddrs(), ",") + "/0?master_name=" + MasterName
}

// Master returns the server the Sentinels name as master now.
func (s *Sentinel) Master(ctx context.Context) (*Process, error) {
	var lastErr error = errNoMaster
	for _, p := range s.sentinels {
		addr, err := sentinelMaster(ctx, p.Addr())
		if err != nil {
			lastErr = err
			continue
		}
		for _, q := range s.servers {
			if q.Addr() == addr {
				return q, nil
			}
		}
		lastErr = fmt.Errorf("master %s is not one of ours", addr)
	}
	return nil, lastErr
}

// Servers returns the master and the replica as started (a failover swaps
// their roles, not the order).
func (s *Sentinel) Servers() []*Process { return s.servers }

// Stop stops every process and removes their directories.
func (s *Sentinel) Stop() {
	for _, p := range s.sentinels {
		p.Stop()
	}
	for _, p := range s.servers {
		p.Stop()
	}
	_ = os.RemoveAll(s.dir)
}

// StartSentinel starts a Sentinel set-up and stops it when tb ends. A test
// that kills the master should start its own with LaunchSentinel and a
// short DownAfter.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	return mustLaunch(tb, func(ctx context.Context, bin string) (*Sentinel, error) {
		return LaunchSentinel(ctx, SentinelOptions{Bin: bin})
	}, (*Sentinel).Stop)
}
