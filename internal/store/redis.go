package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"chatd/internal/blocks"
)

// Redis is the store for several chatd instances sharing state. Each method
// is one Lua script, run in one round trip; see the package documentation for
// the key layout.
type Redis struct {
	client redis.UniversalClient
	opts   Options
}

// NewRedis returns a store on client, which it owns from now on: Close closes
// it. Zero fields of opts take their DefaultOptions values.
func NewRedis(client redis.UniversalClient, opts Options) *Redis {
	return &Redis{client: client, opts: withDefaults(opts)}
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
		return nil, fmt.Errorf("store: redis url: %w", err)
	}
	r := NewRedis(client, opts)
	if read := readTimeout(client); r.opts.WaitReplicas > 0 && read > 0 && r.opts.WaitTimeout >= read {
		_ = client.Close()
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

// redisKeys are the keys of one thread. They share the hash tag {<id>}, so
// Cluster keeps them in one slot and a script may touch them all.
type redisKeys struct {
	thread, msgs, msgdata, pending, elicitations, lock, idem, idemexp string
}

func keysFor(threadID string) redisKeys {
	p := "chatd:{" + threadID + "}:"
	return redisKeys{
		thread:       p + "thread",
		msgs:         p + "msgs",
		msgdata:      p + "msgdata",
		pending:      p + "pending",
		elicitations: p + "elicitations",
		lock:         p + "lock",
		idem:         p + "idem",
		idemexp:      p + "idemexp",
	}
}

func (k redisKeys) all() []string {
	return []string{k.thread, k.msgs, k.msgdata, k.pending, k.elicitations, k.lock, k.idem, k.idemexp}
}

// run executes a script (EVALSHA, falling back to EVAL the first time a
// server sees it) and splits its reply into status and data.
func (r *Redis) run(ctx context.Context, op string, s *redis.Script, keys []string, args ...any) (string, []any, error) {
	reply, err := s.Run(ctx, r.client, keys, args...).Slice()
	if err != nil {
		return "", nil, wrapRedisError(op, err)
	}
	if len(reply) == 0 {
		return "", nil, fmt.Errorf("store: %s: empty script reply", op)
	}
	status, _ := reply[0].(string)
	return status, reply[1:], nil
}

// runWrite runs a script that writes what a client is told is kept. With
// Options.WaitReplicas it pipelines WAIT after the script, on the same
// connection to the master that ran it, so the acknowledgement costs no
// extra round trip; a script that answered OK but reached fewer replicas
// than asked within WaitTimeout is ErrUnavailable.
func (r *Redis) runWrite(ctx context.Context, op string, s *redis.Script, keys []string, args ...any) (string, []any, error) {
	n := r.opts.WaitReplicas
	if n <= 0 {
		return r.run(ctx, op, s, keys, args...)
	}
	var (
		reply []any
		acked int64
		err   error
	)
	cluster, isCluster := r.client.(*redis.ClusterClient)
	for attempt := 0; ; attempt++ {
		var c redis.Cmdable = r.client
		if isCluster {
			// WAIT names no key, so a ClusterClient would send it to any
			// master: send both to the master of the thread's slot.
			node, nerr := cluster.MasterForKey(ctx, keys[0])
			if nerr != nil {
				return "", nil, wrapRedisError(op, nerr)
			}
			c = node
		}
		reply, acked, err = evalAndWait(ctx, c, s, keys, args, n, r.opts.WaitTimeout)
		// MOVED or ASK: the slot has moved (a failover, a resharding) since
		// the client last read the slot map, and the script did not run.
		// Read the map again and retry once on the new master.
		if isCluster && attempt == 0 && err != nil && isRedirect(err) {
			cluster.ReloadState(ctx)
			continue
		}
		break
	}
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

func unexpectedStatus(op, status string) error {
	return fmt.Errorf("store: %s: unexpected script status %q", op, status)
}

func replyString(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok
}

// threadFromReply decodes the owner, processor, created, updated quadruple
// the scripts return.
func threadFromReply(id string, data []any) (Thread, error) {
	if len(data) < 4 {
		return Thread{}, fmt.Errorf("store: thread %s: short reply", id)
	}
	var f [4]string
	for i := range f {
		s, ok := replyString(data[i])
		if !ok {
			return Thread{}, fmt.Errorf("store: thread %s: corrupt record", id)
		}
		f[i] = s
	}
	created, err := parseTime(f[2])
	if err != nil {
		return Thread{}, err
	}
	updated, err := parseTime(f[3])
	if err != nil {
		return Thread{}, err
	}
	return Thread{ID: id, Owner: f[0], Processor: f[1], CreatedAt: created, UpdatedAt: updated}, nil
}

func messagesFromReply(data []any) ([]blocks.Message, error) {
	out := make([]blocks.Message, 0, len(data))
	for _, v := range data {
		s, ok := replyString(v)
		if !ok {
			return nil, errors.New("store: message id without message data")
		}
		m, err := decodeMessage([]byte(s))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// windowArgs appends the history window to a begin script's arguments: the
// default, then processor name and window pairs for the script to match
// against the thread's processor.
func windowArgs(window int, byProcessor map[string]int, args ...any) []any {
	args = append(args, max(window, 0))
	for name, n := range byProcessor {
		args = append(args, name, max(n, 0))
	}
	return args
}

// encodedFromReply collects message JSON from a script reply, undecoded.
func encodedFromReply(data []any) (blocks.EncodedMessages, error) {
	out := make(blocks.EncodedMessages, len(data))
	for i, v := range data {
		s, ok := replyString(v)
		if !ok {
			return nil, errors.New("store: message id without message data")
		}
		out[i] = []byte(s)
	}
	return out, nil
}

func pendingFromReply(v any) (*Pending, error) {
	s, ok := replyString(v)
	if !ok {
		return nil, nil
	}
	return decodePending([]byte(s))
}

// CreateThread stores a new thread. Zero timestamps are set to now.
func (r *Redis) CreateThread(ctx context.Context, t Thread) error {
	t, err := normalizeThread(t, time.Now().UTC())
	if err != nil {
		return err
	}
	call, err := newCallID()
	if err != nil {
		return err
	}
	k := keysFor(t.ID)
	status, _, err := r.runWrite(ctx, "create thread", createScript, []string{k.thread},
		t.Owner, t.Processor, formatTime(t.CreatedAt), formatTime(t.UpdatedAt), r.opts.ThreadTTL.Milliseconds(), call)
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return nil
	case "EXISTS":
		return fmt.Errorf("store: thread %s already exists", t.ID)
	}
	return unexpectedStatus("create thread", status)
}

// GetThread returns the thread and its live pending elicitation (nil when
// none). It returns ErrNotFound when the thread does not exist or principal
// does not own it, and ErrUnavailable when Redis cannot be reached.
func (r *Redis) GetThread(ctx context.Context, threadID, principal string) (Thread, *Pending, error) {
	k := keysFor(threadID)
	status, data, err := r.run(ctx, "get thread", getScript, []string{k.thread, k.pending}, principal)
	if err != nil {
		return Thread{}, nil, err
	}
	switch status {
	case "OK":
	case "NOTFOUND":
		return Thread{}, nil, fmt.Errorf("store: thread %s: %w", threadID, ErrNotFound)
	default:
		return Thread{}, nil, unexpectedStatus("get thread", status)
	}
	t, err := threadFromReply(threadID, data)
	if err != nil {
		return Thread{}, nil, err
	}
	if len(data) < 5 {
		return t, nil, nil
	}
	p, err := pendingFromReply(data[4])
	if err != nil {
		return Thread{}, nil, err
	}
	return t, p, nil
}

// DeleteThread removes the thread and every key it owns. It returns
// ErrNotFound when the thread does not exist or principal does not own it.
func (r *Redis) DeleteThread(ctx context.Context, threadID, principal string) error {
	status, _, err := r.runWrite(ctx, "delete thread", deleteScript, keysFor(threadID).all(), principal)
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return nil
	case "NOTFOUND":
		return fmt.Errorf("store: thread %s: %w", threadID, ErrNotFound)
	}
	return unexpectedStatus("delete thread", status)
}

// BeginTurn starts a plain turn; see the package documentation for the order
// of its checks. It returns ErrNotFound, ErrBusy, a *PendingError or
// ErrUnavailable.
func (r *Redis) BeginTurn(ctx context.Context, b BeginTurn) (TurnStart, error) {
	if err := checkLockTTL(b.LockTTL); err != nil {
		return TurnStart{}, err
	}
	token, err := newLockToken()
	if err != nil {
		return TurnStart{}, err
	}
	field := ""
	if b.IdempotencyKey != "" {
		field = idempotencyField(b.Principal, b.IdempotencyKey)
	}
	k := keysFor(b.ThreadID)
	status, data, err := r.run(ctx, "begin turn", beginTurnScript,
		[]string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.idem, k.idemexp},
		windowArgs(b.Window, b.WindowByProcessor, b.Principal, field, token, b.LockTTL.Milliseconds())...)
	if err != nil {
		return TurnStart{}, err
	}
	switch status {
	case "NOTFOUND":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrNotFound)
	case "BUSY":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrBusy)
	case "PENDING":
		p, err := pendingFromReply(data[0])
		if err != nil {
			return TurnStart{}, err
		}
		return TurnStart{}, &PendingError{Pending: *p}
	case "REPLAY":
		t, err := threadFromReply(b.ThreadID, data)
		if err != nil {
			return TurnStart{}, err
		}
		s, _ := replyString(data[4])
		rec, err := decodeIdempotency([]byte(s))
		if err != nil {
			return TurnStart{}, err
		}
		return TurnStart{Thread: t, Replay: rec}, nil
	case "OK":
		t, err := threadFromReply(b.ThreadID, data)
		if err != nil {
			return TurnStart{}, err
		}
		history, err := encodedFromReply(data[4:])
		if err != nil {
			return TurnStart{}, err
		}
		return TurnStart{Thread: t, LockToken: token, History: history}, nil
	}
	return TurnStart{}, unexpectedStatus("begin turn", status)
}

// BeginResume starts the turn that answers elicitation b.ElicitationID by
// claiming it. It returns ErrNotFound, ErrBusy, ErrElicitationConsumed,
// ErrElicitationExpired, ErrElicitationNotFound or ErrUnavailable.
func (r *Redis) BeginResume(ctx context.Context, b BeginResume) (TurnStart, error) {
	if err := checkLockTTL(b.LockTTL); err != nil {
		return TurnStart{}, err
	}
	token, err := newLockToken()
	if err != nil {
		return TurnStart{}, err
	}
	k := keysFor(b.ThreadID)
	status, data, err := r.run(ctx, "begin resume", beginResumeScript,
		[]string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.elicitations},
		windowArgs(b.Window, b.WindowByProcessor, b.Principal, b.ElicitationID, token, b.LockTTL.Milliseconds())...)
	if err != nil {
		return TurnStart{}, err
	}
	switch status {
	case "NOTFOUND":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrNotFound)
	case "BUSY":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrBusy)
	case "CONSUMED":
		return TurnStart{}, elicitationStateError(b.ElicitationID, elicitationConsumed)
	case "EXPIRED":
		return TurnStart{}, elicitationStateError(b.ElicitationID, elicitationIssued)
	case "UNKNOWN":
		return TurnStart{}, elicitationStateError(b.ElicitationID, "")
	case "OK":
		t, err := threadFromReply(b.ThreadID, data)
		if err != nil {
			return TurnStart{}, err
		}
		p, err := pendingFromReply(data[4])
		if err != nil {
			return TurnStart{}, err
		}
		history, err := encodedFromReply(data[5:])
		if err != nil {
			return TurnStart{}, err
		}
		return TurnStart{Thread: t, LockToken: token, History: history, Pending: p}, nil
	}
	return TurnStart{}, unexpectedStatus("begin resume", status)
}

// CommitTurn writes a turn's outcome and releases its lock, all or nothing.
// It returns ErrNotFound when the thread was deleted, ErrLockLost when
// c.LockToken no longer holds the lock, and ErrUnavailable when Redis cannot
// be reached (the outcome is then unknown). A re-send of this call's script
// that finds its own commit done answers as the commit did.
func (r *Redis) CommitTurn(ctx context.Context, c Commit) error {
	enc, err := encodeMessages(c.Messages)
	if err != nil {
		return err
	}
	var pauseID, pauseData string
	var pauseExpires int64
	if c.Pause != nil {
		b, err := encodePending(*c.Pause)
		if err != nil {
			return err
		}
		pauseID, pauseData, pauseExpires = c.Pause.ElicitationID, string(b), c.Pause.ExpiresAt.UnixMilli()
	}
	var idemField, idemData string
	if c.Idempotency != nil {
		b, err := encodeIdempotency(*c.Idempotency)
		if err != nil {
			return err
		}
		idemField, idemData = idempotencyField(c.Idempotency.Principal, c.Idempotency.Key), string(b)
	}
	call, err := newCallID()
	if err != nil {
		return err
	}
	args := make([]any, 0, 14+2*len(enc))
	args = append(args,
		c.LockToken, formatTime(time.Now()), r.opts.HistoryMax, r.opts.ThreadTTL.Milliseconds(),
		c.Consumed, pauseID, pauseData, pauseExpires,
		idemField, idemData, r.opts.IdempotencyTTL.Milliseconds(),
		call, len(enc))
	for _, e := range enc {
		args = append(args, e.id, e.data)
	}
	args = append(args, r.opts.HistoryMaxBytes)

	k := keysFor(c.ThreadID)
	status, _, err := r.runWrite(ctx, "commit turn", commitScript,
		[]string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.elicitations, k.idem, k.idemexp}, args...)
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return nil
	case "NOTFOUND":
		return fmt.Errorf("store: thread %s: %w", c.ThreadID, ErrNotFound)
	case "LOCKLOST":
		return fmt.Errorf("store: thread %s: %w", c.ThreadID, ErrLockLost)
	}
	return unexpectedStatus("commit turn", status)
}

// Release ends a begun turn without writing anything, un-claiming the
// elicitation a resume claimed. It returns ErrLockLost when lockToken no
// longer holds the lock, which includes a re-send of a release that ran.
func (r *Redis) Release(ctx context.Context, threadID, lockToken string) error {
	status, _, err := r.run(ctx, "release", releaseScript, []string{keysFor(threadID).lock}, lockToken)
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return nil
	case "LOCKLOST":
		return fmt.Errorf("store: thread %s: %w", threadID, ErrLockLost)
	}
	return unexpectedStatus("release", status)
}

// History returns one page of the thread's history; see Page. It returns
// ErrNotFound, ErrUnknownCursor when before is not in the history, or
// ErrUnavailable.
func (r *Redis) History(ctx context.Context, threadID, principal string, limit int, before string) (Page, error) {
	if err := checkLimit(limit); err != nil {
		return Page{}, err
	}
	k := keysFor(threadID)
	status, data, err := r.run(ctx, "history", historyScript, []string{k.thread, k.msgs, k.msgdata}, principal, limit, before)
	if err != nil {
		return Page{}, err
	}
	switch status {
	case "OK":
	case "NOTFOUND":
		return Page{}, fmt.Errorf("store: thread %s: %w", threadID, ErrNotFound)
	case "BADCURSOR":
		return Page{}, fmt.Errorf("store: before %q: %w", before, ErrUnknownCursor)
	default:
		return Page{}, unexpectedStatus("history", status)
	}
	more, _ := data[0].(int64)
	msgs, err := messagesFromReply(data[1:])
	if err != nil {
		return Page{}, err
	}
	page := Page{Messages: msgs}
	if more == 1 && len(msgs) > 0 {
		page.NextBefore = msgs[0].ID
	}
	return page, nil
}

// Ping checks that Redis answers; it returns ErrUnavailable when it does not.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return wrapRedisError("ping", err)
	}
	return nil
}

// Close closes the Redis client.
func (r *Redis) Close() error { return r.client.Close() }
