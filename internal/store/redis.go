package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	thread, hist, pending, elicitations, lock, idem, idemexp string
	// msgs and msgdata held history in the earlier layout; scripts convert
	// what they find there (see lua/lib/history.lua).
	msgs, msgdata string
}

func keysFor(threadID string) redisKeys {
	p := "chatd:{" + threadID + "}:"
	return redisKeys{
		thread:       p + "thread",
		hist:         p + "history",
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
	return []string{k.thread, k.hist, k.msgs, k.msgdata, k.pending, k.elicitations, k.lock, k.idem, k.idemexp}
}

// turnKey is the stream that logs a turn's events; it shares its thread's
// hash tag.
func turnKey(threadID, turnID string) string {
	return "chatd:{" + threadID + "}:turn:" + turnID
}

// ownerKey is the principal's thread index: a sorted set of thread IDs
// scored by their last update (Unix ms). Its hash tag is the principal's (a
// digest, since a principal may hold any character), so Cluster spreads
// principals over slots; it is updated in the same pipeline as the thread.
func ownerKey(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return "chatd:{p:" + hex.EncodeToString(sum[:16]) + "}:threads"
}

// eventArgs appends the ID of the last of events and the records of start
// (when the turn logged a first event: see close_log in the scripts) and of
// events; 0 and "" when there are no events.
func eventArgs(args []any, start TurnEvent, events []TurnEvent) []any {
	if len(events) == 0 {
		return append(args, 0, "")
	}
	size := len(start.Name) + len(start.Data) + 24
	for _, e := range events {
		size += len(e.Name) + len(e.Data) + 24
	}
	records := make([]byte, 0, size)
	if start.Name != "" {
		records = appendRecord(records, start)
	}
	for _, e := range events {
		records = appendRecord(records, e)
	}
	return append(args, events[len(events)-1].ID, records)
}

// lockRecord is a begun turn's first event as a log record after its
// length, "<length>|<record>", as the lock keeps it (see open_log in the
// scripts); "0|" when the turn keeps no log.
func lockRecord(t TurnBegin) []byte {
	if t.ID == "" || t.Start.Name == "" {
		return []byte("0|")
	}
	record := appendRecord(nil, t.Start)
	b := strconv.AppendInt(make([]byte, 0, len(record)+12), int64(len(record)), 10)
	b = append(b, '|')
	return append(b, record...)
}

// appendRecord appends one event of a turn log: the header
// "<id> <name> <data length>\n", then the data.
func appendRecord(b []byte, e TurnEvent) []byte {
	b = strconv.AppendInt(b, int64(e.ID), 10)
	b = append(b, ' ')
	b = append(b, e.Name...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(e.Data)), 10)
	b = append(b, '\n')
	return append(b, e.Data...)
}

// parseLog reads a turn log kept as a string of records.
func parseLog(s string) ([]TurnEvent, error) {
	var out []TurnEvent
	for s != "" {
		header, rest, ok := strings.Cut(s, "\n")
		fields := strings.Fields(header)
		if !ok || len(fields) != 3 {
			return nil, fmt.Errorf("store: corrupt turn log record %q", header)
		}
		id, err1 := strconv.Atoi(fields[0])
		n, err2 := strconv.Atoi(fields[2])
		if err1 != nil || err2 != nil || n < 0 || n > len(rest) {
			return nil, fmt.Errorf("store: corrupt turn log record %q", header)
		}
		out = append(out, TurnEvent{ID: id, Name: fields[1], Data: []byte(rest[:n])})
		s = rest[n:]
	}
	return out, nil
}

// run executes a script (EVALSHA, falling back to EVAL the first time a
// server sees it) and splits its reply into status and data.
func (r *Redis) run(ctx context.Context, op string, s *redis.Script, keys []string, args ...any) (string, []any, error) {
	return splitReply(op, s.Run(ctx, r.client, keys, args...))
}

// runWithIndex runs a script on a thread's keys and, in the same pipeline
// (one round trip; Cluster sends each part to its own node), touches the
// owner's thread index. A script the server does not know yet is loaded and
// the pipeline sent again: the scripts are idempotent per call, and so are
// the index commands.
func (r *Redis) runWithIndex(ctx context.Context, op string, s *redis.Script, keys []string, args []any, index func(redis.Pipeliner)) (string, []any, error) {
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

func splitReply(op string, cmd *redis.Cmd) (string, []any, error) {
	reply, err := cmd.Slice()
	if err != nil {
		return "", nil, wrapRedisError(op, err)
	}
	if len(reply) == 0 {
		return "", nil, fmt.Errorf("store: %s: empty script reply", op)
	}
	status, _ := reply[0].(string)
	return status, reply[1:], nil
}

// runWrite runs a script that writes what a client is told is kept, and
// index, the owner's thread index update, beside it (see runWithIndex).
// With Options.WaitReplicas it pipelines WAIT after the script, on the same
// connection to the master that ran it, so the acknowledgement costs no
// extra round trip; a script that answered OK but reached fewer replicas
// than asked within WaitTimeout is ErrUnavailable. The index, a listing aid
// on another slot, is then updated alongside, not waited for.
func (r *Redis) runWrite(ctx context.Context, op string, s *redis.Script, keys []string, args []any, index func(redis.Pipeliner)) (string, []any, error) {
	n := r.opts.WaitReplicas
	if n <= 0 {
		return r.runWithIndex(ctx, op, s, keys, args, index)
	}
	indexed := make(chan struct{})
	go func() {
		defer close(indexed)
		_, _ = r.client.Pipelined(ctx, func(pipe redis.Pipeliner) error { index(pipe); return nil })
	}()
	defer func() { <-indexed }()
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

// threadFields is how many reply elements a thread takes (thread_reply).
const threadFields = 9

// threadFromReply decodes a thread as thread_reply returns it: owner,
// processor, created, updated, title, metadata, preview (the last three
// nil when absent), then the running turn's ID and start (nil when none).
func threadFromReply(id string, data []any) (Thread, error) {
	if len(data) < threadFields {
		return Thread{}, fmt.Errorf("store: thread %s: short reply", id)
	}
	var f [threadFields]string
	for i := range f {
		s, ok := replyString(data[i])
		if !ok && i < 4 {
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
	t := Thread{ID: id, Owner: f[0], Processor: f[1], CreatedAt: created, UpdatedAt: updated, Preview: f[6]}
	if title, ok := replyString(data[4]); ok {
		t.Title = &title
	}
	if t.Metadata, err = decodeMetadata(f[5]); err != nil {
		return Thread{}, err
	}
	if f[7] != "" {
		ms, err := strconv.ParseInt(f[8], 10, 64)
		if err != nil {
			return Thread{}, fmt.Errorf("store: thread %s: corrupt lock", id)
		}
		t.Running = &RunningTurn{ID: f[7], StartedAt: time.UnixMilli(ms).UTC()}
	}
	return t, nil
}

func messagesFromReply(data []any) ([]blocks.Message, error) {
	recs, err := splitRecords(data)
	if err != nil {
		return nil, err
	}
	out := make([]blocks.Message, 0, len(recs))
	for _, r := range recs {
		m, err := decodeMessage(r)
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
	recs, err := splitRecords(data)
	if err != nil {
		return nil, err
	}
	return blocks.EncodedMessages(recs), nil
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
	// The principal's index counts and lists the thread in the same round
	// trip; a create it finds over the quota is undone.
	var listed *redis.Cmd
	status, _, err := r.runWrite(ctx, "create thread", createScript, []string{k.thread},
		[]any{t.Owner, t.Processor, formatTime(t.CreatedAt), formatTime(t.UpdatedAt), r.opts.ThreadTTL.Milliseconds(), call},
		func(pipe redis.Pipeliner) { listed = r.indexNew(ctx, pipe, t) })
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return r.enforceQuota(ctx, t, listed)
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
	status, data, err := r.run(ctx, "get thread", getScript, []string{k.thread, k.pending, k.lock}, principal)
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
	if len(data) <= threadFields {
		return t, nil, nil
	}
	p, err := pendingFromReply(data[threadFields])
	if err != nil {
		return Thread{}, nil, err
	}
	return t, p, nil
}

// DeleteThread removes the thread and every key it owns. It returns
// ErrNotFound when the thread does not exist or principal does not own it.
func (r *Redis) DeleteThread(ctx context.Context, threadID, principal string) error {
	status, _, err := r.runWrite(ctx, "delete thread", deleteScript, keysFor(threadID).all(), []any{principal},
		func(pipe redis.Pipeliner) { pipe.ZRem(ctx, ownerKey(principal), threadID) })
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
	args := []any{b.Principal, field, token, b.LockTTL.Milliseconds(), b.Turn.ID, b.Turn.Fingerprint, lockRecord(b.Turn), time.Now().UnixMilli()}
	status, data, err := r.run(ctx, "begin turn", beginTurnScript,
		[]string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.idem, k.idemexp, k.hist},
		windowArgs(b.Window, b.WindowByProcessor, args...)...)
	if err != nil {
		return TurnStart{}, err
	}
	switch status {
	case "NOTFOUND":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrNotFound)
	case "BUSY":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrBusy)
	case "RUNNING":
		turn, _ := replyString(data[0])
		fingerprint, _ := replyString(data[1])
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, &RunningError{TurnID: turn, Fingerprint: fingerprint})
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
		s, _ := replyString(data[threadFields])
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
		history, err := encodedFromReply(data[threadFields:])
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
	args := []any{b.Principal, b.ElicitationID, token, b.LockTTL.Milliseconds(), b.Turn.ID, lockRecord(b.Turn), time.Now().UnixMilli()}
	status, data, err := r.run(ctx, "begin resume", beginResumeScript,
		[]string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.elicitations, k.hist},
		windowArgs(b.Window, b.WindowByProcessor, args...)...)
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
		state := elicitationExpired
		if len(data) > 0 && data[0] == "first" {
			state = elicitationIssued
		}
		return TurnStart{}, elicitationStateError(b.ElicitationID, state)
	case "UNKNOWN":
		return TurnStart{}, elicitationStateError(b.ElicitationID, "")
	case "OK":
		t, err := threadFromReply(b.ThreadID, data)
		if err != nil {
			return TurnStart{}, err
		}
		p, err := pendingFromReply(data[threadFields])
		if err != nil {
			return TurnStart{}, err
		}
		history, err := encodedFromReply(data[threadFields+1:])
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
	eventsTTL := int64(0)
	if c.TurnID != "" {
		eventsTTL = r.opts.TurnEventsTTL.Milliseconds()
	}
	now := time.Now()
	args := make([]any, 0, 18+2*len(enc))
	args = append(args,
		c.LockToken, formatTime(now), r.opts.HistoryMax, r.opts.ThreadTTL.Milliseconds(),
		c.Consumed, pauseID, pauseData, pauseExpires,
		idemField, idemData, r.opts.IdempotencyTTL.Milliseconds(),
		call, c.Preview, eventsTTL, len(enc))
	for _, e := range enc {
		args = append(args, e.id, e.data)
	}
	args = append(args, r.opts.HistoryMaxBytes)
	args = eventArgs(args, c.Start, c.Events)

	k := keysFor(c.ThreadID)
	keys := []string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.elicitations, k.idem, k.idemexp, turnKey(c.ThreadID, c.TurnID), k.hist}
	index := func(redis.Pipeliner) {}
	if c.Owner != "" {
		index = r.touchIndex(c.Owner, c.ThreadID, now, true)
	}
	status, _, err := r.runWrite(ctx, "commit turn", commitScript, keys, args, index)
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

// touchIndex returns the pipeline step that records a thread's update in its
// owner's index; existing only updates a thread already listed (a commit
// must not bring back a thread deleted meanwhile).
func (r *Redis) touchIndex(owner, threadID string, updated time.Time, existing bool) func(redis.Pipeliner) {
	return func(pipe redis.Pipeliner) {
		key := ownerKey(owner)
		z := redis.Z{Score: float64(updated.UnixMilli()), Member: threadID}
		if existing {
			pipe.ZAddArgs(context.Background(), key, redis.ZAddArgs{XX: true, GT: true, Members: []redis.Z{z}})
		} else {
			pipe.ZAdd(context.Background(), key, z)
		}
		pipe.PExpire(context.Background(), key, r.opts.ThreadTTL)
	}
}

// Release ends a begun turn without writing its outcome, un-claiming the
// elicitation a resume claimed, and appends rel.Events to the turn's log. It
// returns ErrLockLost when rel.LockToken no longer holds the lock, which
// includes a re-send of a release that ran.
func (r *Redis) Release(ctx context.Context, rel ReleaseTurn) error {
	eventsTTL := int64(0)
	if rel.TurnID != "" {
		eventsTTL = r.opts.TurnEventsTTL.Milliseconds()
	}
	status, _, err := r.run(ctx, "release", releaseScript,
		[]string{keysFor(rel.ThreadID).lock, turnKey(rel.ThreadID, rel.TurnID)},
		eventArgs([]any{rel.LockToken, eventsTTL}, rel.Start, rel.Events)...)
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return nil
	case "LOCKLOST":
		return fmt.Errorf("store: thread %s: %w", rel.ThreadID, ErrLockLost)
	}
	return unexpectedStatus("release", status)
}

// AppendTurnEvents adds events to the log of a running turn, in one round
// trip. A log that has expired takes nothing and is not an error.
func (r *Redis) AppendTurnEvents(ctx context.Context, threadID, turnID string, events []TurnEvent) error {
	status, _, err := r.run(ctx, "append turn events", appendEventsScript,
		[]string{turnKey(threadID, turnID), keysFor(threadID).lock},
		eventArgs([]any{turnID, r.opts.TurnEventsTTL.Milliseconds()}, TurnEvent{}, events)...)
	if err != nil {
		return err
	}
	if status != "OK" {
		return unexpectedStatus("append turn events", status)
	}
	return nil
}

// TurnEvents returns the events of a turn's log after the one with ID
// after, oldest first, and whether the log has ended (holds its last
// event, or was written whole when its turn ended). When there are none yet and the log has not ended it waits up to
// wait for more (XREAD BLOCK). It returns ErrNotFound for a
// thread principal does not own, ErrTurnNotFound for a log that does not
// exist, and ErrUnavailable.
func (r *Redis) TurnEvents(ctx context.Context, threadID, principal, turnID string, after int, wait time.Duration) ([]TurnEvent, bool, error) {
	key := turnKey(threadID, turnID)
	k := keysFor(threadID)
	status, data, err := r.run(ctx, "turn events", turnEventsScript, []string{k.thread, key, k.lock},
		principal, after, turnID, r.opts.TurnEventsTTL.Milliseconds())
	if err != nil {
		return nil, false, err
	}
	switch status {
	case "OK":
	case "NOTFOUND":
		return nil, false, fmt.Errorf("store: thread %s: %w", threadID, ErrNotFound)
	case "NOTURN":
		return nil, false, fmt.Errorf("store: turn %s: %w", turnID, ErrTurnNotFound)
	default:
		return nil, false, unexpectedStatus("turn events", status)
	}
	var events []TurnEvent
	var ended bool
	if kind, _ := replyString(data[0]); kind == "string" {
		// Written whole when its turn ended: nothing follows.
		events, err = eventsFromReply(data[1:], after)
		ended = true
	} else {
		// A stream has ended when its last entry ends with the turn's
		// last event.
		var last []TurnEvent
		if last, err = eventsFromReply(data[1:2], 0); err != nil {
			return nil, false, err
		}
		ended = len(last) > 0 && last[len(last)-1].Final()
		events, err = eventsFromReply(data[2:], after)
	}
	if err != nil || len(events) > 0 || ended || wait <= 0 {
		return events, ended, err
	}
	// Wait for the log to grow, then read what is new as above: XREAD only
	// wakes the reader (a stream entry may hold a batch of events, some of
	// which the reader already has).
	err = r.client.XRead(ctx, &redis.XReadArgs{
		Streams: []string{key, "0-" + strconv.Itoa(after)}, Block: wait, Count: 1,
	}).Err()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, wrapRedisError("turn events", err)
	}
	return r.TurnEvents(ctx, threadID, principal, turnID, after, 0)
}

// eventsFromReply reads the strings of records a log is read as, keeping
// the events after ID after: a batch may begin before it, and a batch
// re-sent after a lost reply may repeat what an earlier one holds.
func eventsFromReply(data []any, after int) ([]TurnEvent, error) {
	var out []TurnEvent
	for _, d := range data {
		s, _ := replyString(d)
		events, err := parseLog(s)
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			if e.ID > after {
				out = append(out, e)
				after = e.ID
			}
		}
	}
	return out, nil
}

// UpdateThread applies patch to the principal's thread and returns it. It
// returns ErrNotFound, ErrMetadataTooLarge with nothing changed, or
// ErrUnavailable. Metadata is merged here and written only if it has not
// changed since it was read, so concurrent patches never lose a key.
func (r *Redis) UpdateThread(ctx context.Context, threadID, principal string, patch ThreadPatch) (Thread, error) {
	k := keysFor(threadID)
	title, hasTitle, setTitle := "", 0, 0
	if patch.SetTitle {
		setTitle = 1
		if patch.Title != nil {
			title, hasTitle = *patch.Title, 1
		}
	}
	for attempt := 0; ; attempt++ {
		current, _, err := r.GetThread(ctx, threadID, principal)
		if err != nil {
			return Thread{}, err
		}
		read, err := encodeMetadata(current.Metadata)
		if err != nil {
			return Thread{}, err
		}
		merged, err := mergeMetadata(current.Metadata, patch)
		if err != nil {
			return Thread{}, err
		}
		next, err := encodeMetadata(merged)
		if err != nil {
			return Thread{}, err
		}
		now := time.Now()
		status, data, err := r.runWithIndex(ctx, "update thread", updateThreadScript, []string{k.thread, k.lock},
			[]any{principal, read, next, setTitle, title, hasTitle, formatTime(now), r.opts.ThreadTTL.Milliseconds()},
			r.touchIndex(principal, threadID, now, true))
		if err != nil {
			return Thread{}, err
		}
		switch status {
		case "OK":
			return threadFromReply(threadID, data)
		case "NOTFOUND":
			return Thread{}, fmt.Errorf("store: thread %s: %w", threadID, ErrNotFound)
		case "CHANGED":
			if attempt < 10 {
				continue
			}
			return Thread{}, fmt.Errorf("store: thread %s: metadata keeps changing: %w", threadID, ErrBusy)
		}
		return Thread{}, unexpectedStatus("update thread", status)
	}
}

// ListThreads returns a page of the principal's threads, most recently
// updated first, after cursor (empty for the first page). Threads that
// expired are dropped from the index as they are found. It returns
// ErrUnknownCursor for a cursor it did not mint, and ErrUnavailable.
func (r *Redis) ListThreads(ctx context.Context, principal string, limit int, cursor string) (ThreadList, error) {
	if limit < 1 {
		return ThreadList{}, fmt.Errorf("store: limit %d: must be positive", limit)
	}
	after, err := parseThreadCursor(cursor)
	if err != nil {
		return ThreadList{}, err
	}
	index := ownerKey(principal)
	var list ThreadList
	// positioned says whether after holds a position to list from (the
	// cursor's, then the last thread listed).
	positioned := cursor != ""
	for {
		// One more than needed tells whether another page exists.
		want := limit - len(list.Threads) + 1
		score := ""
		if positioned {
			score = strconv.FormatInt(after.updated, 10)
		}
		status, data, err := r.run(ctx, "list threads", listThreadsScript, []string{index}, want, score, after.id)
		if err != nil {
			return ThreadList{}, err
		}
		if status != "OK" {
			return ThreadList{}, unexpectedStatus("list threads", status)
		}
		var ids []threadCursor
		for i := 0; i+1 < len(data); i += 2 {
			id, _ := replyString(data[i])
			s, _ := replyString(data[i+1])
			ms, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return ThreadList{}, fmt.Errorf("store: corrupt thread index score %q", s)
			}
			ids = append(ids, threadCursor{updated: int64(ms), id: id})
		}
		states, err := r.threadStates(ctx, principal, ids)
		if err != nil {
			return ThreadList{}, err
		}
		var stale []any
		for i, c := range ids {
			if states[i] == nil {
				stale = append(stale, c.id)
				continue
			}
			if len(list.Threads) == limit {
				list.Next = after.String()
				break
			}
			list.Threads = append(list.Threads, *states[i])
			after, positioned = c, true
		}
		if len(stale) > 0 {
			if err := r.client.ZRem(ctx, index, stale...).Err(); err != nil {
				return ThreadList{}, wrapRedisError("list threads", err)
			}
		}
		if list.Next != "" || len(ids) < want {
			return list, nil
		}
	}
}

// threadStates reads each thread in one pipeline; a thread that no longer
// exists (or is not principal's) is nil.
func (r *Redis) threadStates(ctx context.Context, principal string, ids []threadCursor) ([]*ThreadState, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if err := getScript.Load(ctx, r.client).Err(); err != nil {
		return nil, wrapRedisError("list threads", err)
	}
	cmds := make([]*redis.Cmd, len(ids))
	_, err := r.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, c := range ids {
			k := keysFor(c.id)
			cmds[i] = getScript.EvalSha(ctx, pipe, []string{k.thread, k.pending, k.lock}, principal)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		for _, cmd := range cmds {
			if cmd.Err() != nil {
				return nil, wrapRedisError("list threads", cmd.Err())
			}
		}
	}
	out := make([]*ThreadState, len(ids))
	for i, cmd := range cmds {
		status, data, err := splitReply("list threads", cmd)
		if err != nil {
			return nil, err
		}
		if status != "OK" {
			continue
		}
		t, err := threadFromReply(ids[i].id, data)
		if err != nil {
			return nil, err
		}
		st := &ThreadState{Thread: t}
		if len(data) > threadFields {
			if st.Pending, err = pendingFromReply(data[threadFields]); err != nil {
				return nil, err
			}
		}
		out[i] = st
	}
	return out, nil
}

// History returns one page of the thread's history; see Page. It returns
// ErrNotFound, ErrUnknownCursor when before is not in the history, or
// ErrUnavailable.
func (r *Redis) History(ctx context.Context, threadID, principal string, limit int, before string) (Page, error) {
	if err := checkLimit(limit); err != nil {
		return Page{}, err
	}
	k := keysFor(threadID)
	status, data, err := r.run(ctx, "history", historyScript, []string{k.thread, k.msgs, k.msgdata, k.hist}, principal, limit, before)
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

// RenewLock extends a running turn's lock lease to ttl from now, and its
// event log with it. It returns ErrLockLost when lockToken no longer holds
// the lock (the lease lapsed and another turn may have taken the thread),
// and ErrUnavailable when Redis cannot be reached.
func (r *Redis) RenewLock(ctx context.Context, threadID, lockToken, turnID string, ttl time.Duration) error {
	if err := checkLockTTL(ttl); err != nil {
		return err
	}
	status, _, err := r.run(ctx, "renew lock", renewScript,
		[]string{keysFor(threadID).lock, turnKey(threadID, turnID)},
		lockToken, ttl.Milliseconds(), r.opts.TurnEventsTTL.Milliseconds())
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return nil
	case "LOCKLOST":
		return fmt.Errorf("store: thread %s: %w", threadID, ErrLockLost)
	}
	return unexpectedStatus("renew lock", status)
}

// indexNew lists new thread t in its owner's index if the owner has fewer
// than MaxThreads listed (indexNewScript).
func (r *Redis) indexNew(ctx context.Context, c redis.Scripter, t Thread) *redis.Cmd {
	return indexNewScript.Eval(ctx, c, []string{ownerKey(t.Owner)},
		r.opts.MaxThreads, t.ID, t.UpdatedAt.UnixMilli(), r.opts.ThreadTTL.Milliseconds())
}

// enforceQuota undoes the create of t when its owner already had MaxThreads
// live threads. The owner's index may still list threads that expired or
// were deleted by a crashed instance, so a full index is checked thread by
// thread (scripts, so the primary answers, not a replica behind on
// deletes), the dead ones dropped, and t listed again if there is room now.
// Counting and listing are one script, so creates racing at the quota pass
// only as many as there is room for. A thread listed or updated in the
// last quotaGrace counts as live whatever its record says: a racing create may
// list its thread before writing it (the index and the thread are on
// different slots, and with WaitReplicas in different pipelines). An index
// that could not be reached is no reason to refuse a thread that was
// created: it is listed as best it can be, and the quota holds again from
// the next create.
func (r *Redis) enforceQuota(ctx context.Context, t Thread, listed *redis.Cmd) error {
	reply, err := listed.Slice()
	if err != nil {
		r.listAnyway(ctx, t)
		return nil
	}
	if len(reply) == 0 || reply[0] != "FULL" {
		return nil
	}
	var ids []any
	recent := time.Now().Add(-quotaGrace).UnixMilli()
	for i := 1; i+1 < len(reply); i += 2 {
		member, _ := replyString(reply[i])
		score, _ := replyString(reply[i+1])
		if ms, err := strconv.ParseFloat(score, 64); member != t.ID && err == nil && int64(ms) < recent {
			ids = append(ids, member)
		}
	}
	if err := existsScript.Load(ctx, r.client).Err(); err != nil {
		return r.undoCreate(ctx, t, wrapRedisError("count threads", err))
	}
	exists := make([]*redis.Cmd, len(ids))
	if _, err := r.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, id := range ids {
			exists[i] = existsScript.EvalSha(ctx, pipe, []string{keysFor(id.(string)).thread})
		}
		return nil
	}); err != nil {
		return r.undoCreate(ctx, t, wrapRedisError("count threads", err))
	}
	var dead []any
	for i, c := range exists {
		if n, _ := c.Int64(); n == 0 {
			dead = append(dead, ids[i])
		}
	}
	if len(dead) > 0 {
		if _, _, err := r.run(ctx, "count threads", unindexScript, []string{ownerKey(t.Owner)}, dead...); err != nil {
			return r.undoCreate(ctx, t, err)
		}
		// Room was made: t takes it unless a racing create took it first.
		again, err := r.indexNew(ctx, r.client, t).Slice()
		if err != nil {
			r.listAnyway(ctx, t)
			return nil
		}
		if len(again) == 0 || again[0] != "FULL" {
			return nil
		}
	}
	return r.undoCreate(ctx, t, fmt.Errorf("store: principal owns %d threads: %w", r.opts.MaxThreads, ErrQuotaExceeded))
}

// listAnyway lists t in its owner's index, unchecked, when the checked
// listing failed: a listing aid the next write or listing repairs.
func (r *Redis) listAnyway(ctx context.Context, t Thread) {
	_, _ = r.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		r.touchIndex(t.Owner, t.ID, t.UpdatedAt, false)(pipe)
		return nil
	})
}

// quotaGrace is how long a thread counts against its owner's quota
// unchecked once listed (see enforceQuota).
const quotaGrace = time.Minute

// undoCreate deletes thread t, created over its owner's quota or with the
// quota unknown, and returns why.
func (r *Redis) undoCreate(ctx context.Context, t Thread, why error) error {
	if err := r.DeleteThread(ctx, t.ID, t.Owner); err != nil {
		return err
	}
	return why
}
