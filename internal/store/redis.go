package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the store for several chatd instances sharing state. Each method
// is one Lua script, run in one round trip; see the package documentation for
// the key layout.
type Redis struct {
	client redis.UniversalClient
	opts   Options
	// follows waits for turn logs to grow on a client of its own, which
	// Close closes too when it is not client itself.
	follows    *logWaiters
	ownFollows bool
	// holds is this store on the client that keeps running turns' hold on
	// their threads (see NewRedisClients); itself when there is none.
	holds *Redis
	// appends sends turn-log appends of all turns in shared pipelines.
	appends *appendBatcher
}

// NewRedis returns a store on client, which it owns from now on: Close closes
// it. Zero fields of opts take their DefaultOptions values. Followers of turn
// logs wait on client too; OpenRedis gives them a client of their own.
func NewRedis(client redis.UniversalClient, opts Options) *Redis {
	return NewRedisClients(RedisClients{Main: client}, opts)
}

// NewRedisFollowing is NewRedis with a second client, on the same Redis,
// for the blocking reads of turn logs' followers (see logWaiters): its pool
// is theirs, so however many clients follow turns, the pool turns renew
// their leases and commit from is never theirs to hold. The store owns both
// clients.
func NewRedisFollowing(client, follow redis.UniversalClient, opts Options) *Redis {
	return NewRedisClients(RedisClients{Main: client, Follow: follow}, opts)
}

// RedisClients are the clients, all on the same Redis, a store spreads its
// work over, each with a pool of its own.
type RedisClients struct {
	// Main serves everything the others do not.
	Main redis.UniversalClient
	// Follow serves the blocking reads of turn logs' followers (see
	// logWaiters); nil means Main.
	Follow redis.UniversalClient
	// Hold serves what keeps a running turn's hold on its thread: its lease
	// renewals, and the commit or release that ends it; nil means Main.
	// Thousands of streamed turns append to their logs on Main's pool, a
	// few times a second each, and a renewal queued behind their appends
	// can be late enough for the lease to lapse; on a pool of their own,
	// renewals wait only for each other, a few a turn.
	Hold redis.UniversalClient
}

// NewRedisClients returns a store on c, which it owns from now on: Close
// closes every client of it. Zero fields of opts take their DefaultOptions
// values.
func NewRedisClients(c RedisClients, opts Options) *Redis {
	r := &Redis{client: c.Main, opts: withDefaults(opts), follows: newLogWaiters(c.Main), appends: newAppendBatcher(c.Main)}
	if c.Follow != nil {
		r.follows, r.ownFollows = newLogWaiters(c.Follow), true
	}
	r.holds = r
	if c.Hold != nil {
		holds := *r
		holds.client, holds.ownFollows = c.Hold, false
		holds.holds = &holds
		r.holds = &holds
	}
	return r
}

// OpenRedis connects lazily to the Redis that rawURL names and returns a
// store on it. The URL is redis:// or rediss:// (TLS) with the options
// go-redis understands as query parameters (dial_timeout, pool_size, …):
//
//	redis://user:pass@host:6379/0                    one node
//	redis://host1:6379,host2:6379,host3:6379         Cluster (seed nodes)
//	redis://host1:6379?addr=host2:6379               Cluster, same thing
//	redis://s1:26379,s2:26379/0?master_name=mymaster Sentinel-managed primary
//
// Several addresses, comma-separated or as addr= parameters, select Cluster;
// master_name selects Sentinel, the addresses then being the sentinels'. No
// connection is made until the first operation, so a Redis that is down at
// start-up is reported by Ping, not here.
func OpenRedis(rawURL string, opts Options) (*Redis, error) {
	client, err := newRedisClient(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: redis url: %s", redactPassword(rawURL, err.Error()))
	}
	// The URL parsed once already.
	follow, _ := newRedisClient(rawURL)
	hold, _ := newRedisClient(rawURL)
	if opts.Trace {
		for _, c := range []redis.UniversalClient{client, follow, hold} {
			c.AddHook(traceHook{})
		}
	}
	r := NewRedisClients(RedisClients{Main: client, Follow: follow, Hold: hold}, opts)
	if read := readTimeout(client); r.opts.WaitReplicas > 0 && read > 0 && r.opts.WaitTimeout >= read {
		_ = r.Close()
		return nil, fmt.Errorf("store: the wait timeout (%s) must be below the client's read timeout (%s, the URL's read_timeout)",
			r.opts.WaitTimeout, read)
	}
	return r, nil
}

// readTimeout is how long client waits for a reply; WAIT must answer within
// it.
func readTimeout(client redis.UniversalClient) time.Duration {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ReadTimeout
	case *redis.ClusterClient:
		return c.Options().ReadTimeout
	}
	return 0
}

func newRedisClient(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(splitHosts(rawURL))
	if err != nil {
		return nil, err
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("scheme must be redis or rediss, got %q", u.Scheme)
	}
	q := u.Query()
	switch {
	case q.Has("master_name"):
		o, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, err
		}
		return redis.NewFailoverClient(o), nil
	case q.Has("addr"):
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, err
		}
		return redis.NewClusterClient(o), nil
	default:
		o, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, err
		}
		return redis.NewClient(o), nil
	}
}

// redactPassword replaces the password of rawURL wherever msg quotes it (a
// parse error quotes the whole URL): an error about the URL is logged, and
// the password must not be.
func redactPassword(rawURL, msg string) string {
	_, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return msg
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return msg
	}
	_, password, ok := strings.Cut(rest[:at], ":")
	if !ok || password == "" {
		return msg
	}
	quoted := strconv.Quote(password)
	for _, p := range []string{":" + password + "@", ":" + quoted[1:len(quoted)-1] + "@"} {
		msg = strings.ReplaceAll(msg, p, ":xxxxx@")
	}
	return msg
}

// splitHosts rewrites "redis://a:1,b:2,c:3/0?x" as
// "redis://a:1/0?x&addr=b:2&addr=c:3", the form go-redis parses; a URL with
// one host is returned unchanged.
func splitHosts(rawURL string) string {
	schemeEnd := strings.Index(rawURL, "://")
	if schemeEnd < 0 {
		return rawURL
	}
	rest := rawURL[schemeEnd+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	at := strings.LastIndex(authority, "@")
	hosts := strings.Split(authority[at+1:], ",")
	if len(hosts) == 1 {
		return rawURL
	}
	tail := rest[end:]
	fragment := ""
	if i := strings.Index(tail, "#"); i >= 0 {
		tail, fragment = tail[:i], tail[i:]
	}
	var extra strings.Builder
	for _, h := range hosts[1:] {
		extra.WriteString("addr=" + url.QueryEscape(h))
		extra.WriteByte('&')
	}
	params := strings.TrimSuffix(extra.String(), "&")
	if strings.Contains(tail, "?") {
		tail += "&" + params
	} else {
		tail += "?" + params
	}
	return rawURL[:schemeEnd+3] + authority[:at+1] + hosts[0] + tail + fragment
}

// run executes a script (EVALSHA, falling back to EVAL the first time a
// server sees it) and splits its reply into status and data.
func (r *Redis) run(ctx context.Context, op string, c scriptCall) (string, []any, error) {
	return splitReply(op, c.script().Run(ctx, r.client, c.keys(), c.args()...))
}

// evalSha queues c by its script's hash on a pipeline (or sends it); the
// caller makes sure the server has the script.
func evalSha(ctx context.Context, s redis.Scripter, c scriptCall) *redis.Cmd {
	return c.script().EvalSha(ctx, s, c.keys(), c.args()...)
}

// runWithIndex runs a script on a thread's keys and, in the same pipeline
// (one round trip; Cluster sends each part to its own node), touches the
// owner's thread index. A script the server does not know yet is loaded and
// the pipeline sent again: the scripts are idempotent per call, and so are
// the index commands.
func (r *Redis) runWithIndex(ctx context.Context, op string, c scriptCall, index func(redis.Pipeliner)) (string, []any, error) {
	s, keys, args := c.script(), c.keys(), c.args()
	var cmd *redis.Cmd
	send := func() error {
		_, err := r.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			cmd = s.EvalSha(ctx, pipe, keys, args...)
			index(pipe)
			return nil
		})
		return err
	}
	err := send()
	if err != nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		if err = s.Load(ctx, r.client).Err(); err == nil {
			err = send()
		}
	}
	if err != nil && cmd.Err() == nil {
		// The script ran; only the index command failed. The index is a
		// listing aid that the next write or listing repairs.
		err = nil
	}
	if err != nil {
		return "", nil, wrapRedisError(op, err)
	}
	return splitReply(op, cmd)
}

// runWrite runs a script that writes what a client is told is kept, and
// index, the owner's thread index update, beside it (see runWithIndex).
// With Options.WaitReplicas it pipelines WAIT after the script, on the same
// connection to the master that ran it, so the acknowledgement costs no
// extra round trip; a script that answered OK but reached fewer replicas
// than asked within WaitTimeout is ErrUnavailable. The index, a listing aid
// on another slot, is then updated alongside, not waited for.
func (r *Redis) runWrite(ctx context.Context, op string, c scriptCall, index func(redis.Pipeliner)) (string, []any, error) {
	n := r.opts.WaitReplicas
	if n <= 0 {
		return r.runWithIndex(ctx, op, c, index)
	}
	indexed := make(chan struct{})
	go func() {
		defer close(indexed)
		_, _ = r.client.Pipelined(ctx, func(pipe redis.Pipeliner) error { index(pipe); return nil })
	}()
	defer func() { <-indexed }()
	reply, acked, err := r.evalOnMaster(ctx, c, n)
	if err != nil {
		return "", nil, wrapRedisError(op, err)
	}
	if len(reply) == 0 {
		return "", nil, fmt.Errorf("store: %s: empty script reply", op)
	}
	status, _ := reply[0].(string)
	if status == "OK" && acked < int64(n) {
		return "", nil, fmt.Errorf("store: %s: %w: written on the master, acknowledged by %d of %d replicas within %s",
			op, ErrUnavailable, acked, n, r.opts.WaitTimeout)
	}
	return status, reply[1:], nil
}

// evalOnMaster runs c followed by WAIT for n replicas (see evalAndWait) on
// the master of its keys' slot.
func (r *Redis) evalOnMaster(ctx context.Context, c scriptCall, n int) ([]any, int64, error) {
	s, keys, args := c.script(), c.keys(), c.args()
	cluster, isCluster := r.client.(*redis.ClusterClient)
	if !isCluster {
		return evalAndWait(ctx, r.client, s, keys, args, n, r.opts.WaitTimeout)
	}
	for attempt := 0; ; attempt++ {
		// WAIT names no key, so a ClusterClient would send it to any
		// master: send both to the master of the thread's slot.
		node, err := cluster.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, 0, err
		}
		reply, acked, err := evalAndWait(ctx, node, s, keys, args, n, r.opts.WaitTimeout)
		// MOVED or ASK: the slot has moved (a failover, a resharding) since
		// the client last read the slot map, and the script did not run.
		// Read the map again and retry once on the new master.
		if attempt == 0 && err != nil && isRedirect(err) {
			cluster.ReloadState(ctx)
			continue
		}
		return reply, acked, err
	}
}

// evalAndWait sends EVALSHA and WAIT in one pipeline, and again with EVAL
// if the server does not have the script yet. It returns the script's reply
// and how many replicas acknowledged.
func evalAndWait(ctx context.Context, c redis.Cmdable, s *redis.Script, keys []string, args []any, n int, timeout time.Duration) ([]any, int64, error) {
	run := func(eval func(p redis.Pipeliner) *redis.Cmd) ([]any, int64, error) {
		p := c.Pipeline()
		script := eval(p)
		// Pipeliner has no Wait; the pipeline's read deadline is the
		// client's read timeout, which WaitTimeout must stay below.
		wait := p.Do(ctx, "wait", n, timeout.Milliseconds())
		_, _ = p.Exec(ctx)
		reply, err := script.Slice()
		if err != nil {
			return nil, 0, err
		}
		acked, err := wait.Int64()
		return reply, acked, err
	}
	reply, acked, err := run(func(p redis.Pipeliner) *redis.Cmd { return s.EvalSha(ctx, p, keys, args...) })
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return run(func(p redis.Pipeliner) *redis.Cmd { return s.Eval(ctx, p, keys, args...) })
	}
	return reply, acked, err
}

func isRedirect(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")
}

// wrapRedisError marks errors that mean the server cannot be reached, cannot
// serve right now, or refuses this client by configuration (credentials,
// ACL), as ErrUnavailable, keeping the cause in the chain. None of them is
// the request's fault, and a request cannot fix them: the API answers 503
// and readiness fails, so the instance is taken out of rotation until the
// deployment is fixed. A cancelled context is the caller's doing and is not
// marked.
func wrapRedisError(op string, err error) error {
	if isUnavailable(err) {
		return fmt.Errorf("store: %s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

func isUnavailable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	// MOVED or ASK reaching here means the client followed redirects as
	// far as it would while the Cluster's slot map was changing (a
	// failover): the slot is between masters, not the request at fault.
	return isRedirect(err) || redis.IsLoadingError(err) || redis.IsClusterDownError(err) || redis.IsTryAgainError(err) ||
		redis.IsMasterDownError(err) || redis.IsReadOnlyError(err) || redis.IsMaxClientsError(err) ||
		redis.IsOOMError(err) || redis.IsAuthError(err) || redis.IsPermissionError(err)
}

// Ping checks that Redis answers; it returns ErrUnavailable when it does not.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return wrapRedisError("ping", err)
	}
	return nil
}

// Close closes the store's Redis clients.
func (r *Redis) Close() error {
	err := r.client.Close()
	if r.ownFollows {
		err = errors.Join(err, r.follows.client.Close())
	}
	if r.holds != r {
		err = errors.Join(err, r.holds.client.Close())
	}
	return err
}
