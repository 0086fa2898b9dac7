package store

import (
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every Redis operation is one of these Lua scripts: Redis runs a script
// without interleaving any other command, so each operation is atomic, and
// because a script names only one thread's keys (all in one hash slot) it
// runs on one Cluster node. Scripts answer with an array whose first element
// is a status word; "OK" is followed by the operation's data.
//
// Every script that writes is idempotent for a repeated call with the same
// arguments: go-redis re-sends a command whose reply did not arrive in time
// (ReadTimeout, MaxRetries), although the first send may have run. A begin's
// lock token and a create's or commit's call ID are minted once per store
// call, so a re-sent script carries the same one and recognises the state
// its first run left: it then answers as the first run did instead of BUSY,
// CONSUMED, LOCKLOST or EXISTS, which would report a failure for work that
// was done. Another call never carries that token or ID, so it is refused as
// before.

// The scripts, each documented in its file in lua/.
var (
	createThreadScript = newScript("create_thread.lua")
	getThreadScript    = newScript("get_thread.lua")
	deleteThreadScript = newScript("delete_thread.lua")
	updateThreadScript = newScript("update_thread.lua")
	listThreadsScript  = newScript("list_threads.lua")
	indexNewScript     = newScript("index_new.lua")
	existsScript       = newScript("exists.lua")
	unindexScript      = newScript("unindex.lua")
	beginTurnScript    = newScript("begin_turn.lua")
	beginResumeScript  = newScript("begin_resume.lua")
	commitTurnScript   = newScript("commit_turn.lua")
	releaseTurnScript  = newScript("release_turn.lua")
	renewLockScript    = newScript("renew_lock.lua")
	historyPageScript  = newScript("history_page.lua")
	appendEventsScript = newScript("append_events.lua")
	turnEventsScript   = newScript("turn_events.lua")
)

// scriptCall is one run of a script: the script, with its keys and
// arguments in the order its file names them at its top. Each script has
// one such type, whose fields say what the script is given; only its keys
// and args methods know the order.
type scriptCall interface {
	script() *redis.Script
	keys() []string
	args() []any
}

// createThreadCall creates thread t, which lives ttl.
type createThreadCall struct {
	k      redisKeys
	t      Thread
	ttl    time.Duration
	callID string
}

func (createThreadCall) script() *redis.Script { return createThreadScript }
func (c createThreadCall) keys() []string      { return []string{c.k.thread} }
func (c createThreadCall) args() []any {
	return []any{c.t.Owner, c.t.Processor, formatTime(c.t.CreatedAt), formatTime(c.t.UpdatedAt), c.ttl.Milliseconds(), c.callID}
}

// getThreadCall reads a thread its principal owns.
type getThreadCall struct {
	k         redisKeys
	principal string
}

func (getThreadCall) script() *redis.Script { return getThreadScript }
func (c getThreadCall) keys() []string {
	return []string{c.k.thread, c.k.pending, c.k.lock, c.k.msgs, c.k.msgdata, c.k.hist, c.k.tree}
}
func (c getThreadCall) args() []any { return []any{c.principal} }

// deleteThreadCall deletes a thread its principal owns, with every key.
type deleteThreadCall struct {
	k         redisKeys
	principal string
}

func (deleteThreadCall) script() *redis.Script { return deleteThreadScript }
func (c deleteThreadCall) keys() []string      { return c.k.all() }
func (c deleteThreadCall) args() []any         { return []any{c.principal} }

// updateThreadCall writes a thread's metadata (encoded; "" for none) and,
// when setTitle, its title (nil clears it), and when head is set makes the
// latest descendant of that message the head, provided the metadata is
// still metadataRead.
type updateThreadCall struct {
	k                      redisKeys
	principal              string
	metadataRead, metadata string
	setTitle               bool
	title                  *string
	updated                time.Time
	ttl                    time.Duration
	head                   string
}

func (updateThreadCall) script() *redis.Script { return updateThreadScript }
func (c updateThreadCall) keys() []string {
	return []string{c.k.thread, c.k.lock, c.k.msgs, c.k.msgdata, c.k.hist, c.k.tree}
}
func (c updateThreadCall) args() []any {
	title := ""
	if c.title != nil {
		title = *c.title
	}
	return []any{c.principal, c.metadataRead, c.metadata, luaBool(c.setTitle), title, luaBool(c.title != nil),
		formatTime(c.updated), c.ttl.Milliseconds(), c.head}
}

// listThreadsCall lists up to count threads of a principal's index after
// the cursor after (nil: from the first).
type listThreadsCall struct {
	index string
	count int
	after *threadCursor
}

func (listThreadsCall) script() *redis.Script { return listThreadsScript }
func (c listThreadsCall) keys() []string      { return []string{c.index} }
func (c listThreadsCall) args() []any {
	if c.after == nil {
		return []any{c.count, "", ""}
	}
	return []any{c.count, strconv.FormatInt(c.after.updated, 10), c.after.id}
}

// indexNewCall lists new thread t in its owner's index, which lives ttl,
// if the owner has fewer than maxThreads listed.
type indexNewCall struct {
	t          Thread
	maxThreads int
	ttl        time.Duration
}

func (indexNewCall) script() *redis.Script { return indexNewScript }
func (c indexNewCall) keys() []string      { return []string{ownerKey(c.t.Owner)} }
func (c indexNewCall) args() []any {
	return []any{c.maxThreads, c.t.ID, c.t.UpdatedAt.UnixMilli(), c.ttl.Milliseconds(), quotaSample}
}

// existsCall asks whether a thread exists.
type existsCall struct{ k redisKeys }

func (existsCall) script() *redis.Script { return existsScript }
func (c existsCall) keys() []string      { return []string{c.k.thread} }
func (existsCall) args() []any           { return nil }

// unindexCall drops threads from a principal's index.
type unindexCall struct {
	index string
	ids   []string
}

func (unindexCall) script() *redis.Script { return unindexScript }
func (c unindexCall) keys() []string      { return []string{c.index} }
func (c unindexCall) args() []any {
	args := make([]any, len(c.ids))
	for i, id := range c.ids {
		args[i] = id
	}
	return args
}

// beginTurnCall begins a plain turn with lock token, holding the lock for
// lockTTL, with the idempotency field idemField ("" for none).
type beginTurnCall struct {
	k         redisKeys
	principal string
	idemField string
	token     string
	lockTTL   time.Duration
	turn      TurnBegin
	started   time.Time
	// branch is the branch's last message (see BeginTurn.Branch).
	branch *string
	window historyWindow
}

func (beginTurnCall) script() *redis.Script { return beginTurnScript }
func (c beginTurnCall) keys() []string {
	return []string{c.k.thread, c.k.lock, c.k.pending, c.k.msgs, c.k.msgdata, c.k.idem, c.k.idemexp, c.k.hist, c.k.tree}
}
func (c beginTurnCall) args() []any {
	return c.window.appendArgs([]any{c.principal, c.idemField, c.token, c.lockTTL.Milliseconds(),
		c.turn.ID, c.turn.Fingerprint, lockRecord(c.turn), c.started.UnixMilli(), branchArg(c.branch)})
}

// branchArg is a message a branch ends at as the scripts take it: '-' for
// the head (nil), ” for none, else its ID.
func branchArg(id *string) string {
	if id == nil {
		return "-"
	}
	return *id
}

// beginResumeCall begins the turn that answers elicitation elicitationID,
// claiming it with lock token for lockTTL.
type beginResumeCall struct {
	k             redisKeys
	principal     string
	elicitationID string
	token         string
	lockTTL       time.Duration
	turn          TurnBegin
	started       time.Time
	window        historyWindow
}

func (beginResumeCall) script() *redis.Script { return beginResumeScript }
func (c beginResumeCall) keys() []string {
	return []string{c.k.thread, c.k.lock, c.k.pending, c.k.msgs, c.k.msgdata, c.k.elicitations, c.k.hist, c.k.tree}
}
func (c beginResumeCall) args() []any {
	return c.window.appendArgs([]any{c.principal, c.elicitationID, c.token, c.lockTTL.Milliseconds(),
		c.turn.ID, lockRecord(c.turn), c.started.UnixMilli()})
}

// historyWindow is how many of a thread's newest messages a begin returns:
// n, unless byProcessor names the thread's processor, which only the script
// knows.
type historyWindow struct {
	n           int
	byProcessor map[string]int
}

// appendArgs appends the window to a begin's arguments: n, then processor
// name and window pairs.
func (w historyWindow) appendArgs(args []any) []any {
	args = append(args, max(w.n, 0))
	for name, n := range w.byProcessor {
		args = append(args, name, max(n, 0))
	}
	return args
}

// commitTurnCall writes a turn's outcome (see Commit) and releases its
// lock. pause and idem are encoded already, beside the values they encode;
// eventsTTL is zero for a turn that keeps no log.
type commitTurnCall struct {
	k               redisKeys
	logKey          string
	token, callID   string
	updated         time.Time
	threadTTL       time.Duration
	historyMax      int
	historyMaxBytes int64
	messages        []encodedMessage
	consumed        string
	pause           *Pending
	pauseJSON       []byte
	idem            *Idempotency
	idemJSON        []byte
	idemTTL         time.Duration
	preview         string
	eventsTTL       time.Duration
	log             logBatch
	parent          *string
}

func (commitTurnCall) script() *redis.Script { return commitTurnScript }
func (c commitTurnCall) keys() []string {
	k := c.k
	return []string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.elicitations, k.idem, k.idemexp, c.logKey, k.hist, k.tree}
}
func (c commitTurnCall) args() []any {
	var pauseID string
	var pauseExpires int64
	if c.pause != nil {
		pauseID, pauseExpires = c.pause.ElicitationID, c.pause.ExpiresAt.UnixMilli()
	}
	var idemField string
	if c.idem != nil {
		idemField = idempotencyField(c.idem.Principal, c.idem.Key)
	}
	args := make([]any, 0, 18+2*len(c.messages))
	args = append(args, c.token, c.callID, formatTime(c.updated), c.threadTTL.Milliseconds(),
		c.historyMax, c.historyMaxBytes, c.consumed, pauseID, c.pauseJSON, pauseExpires,
		idemField, c.idemJSON, c.idemTTL.Milliseconds(), c.preview,
		c.eventsTTL.Milliseconds(), c.log.last, c.log.records, branchArg(c.parent))
	for _, m := range c.messages {
		args = append(args, m.id, m.data)
	}
	return args
}

// releaseTurnCall ends a begun turn without its outcome; eventsTTL is zero
// for a turn that keeps no log.
type releaseTurnCall struct {
	lockKey   string
	logKey    string
	token     string
	eventsTTL time.Duration
	log       logBatch
}

func (releaseTurnCall) script() *redis.Script { return releaseTurnScript }
func (c releaseTurnCall) keys() []string      { return []string{c.lockKey, c.logKey} }
func (c releaseTurnCall) args() []any {
	return []any{c.token, c.eventsTTL.Milliseconds(), c.log.last, c.log.records}
}

// renewLockCall extends a running turn's lock lease to lease, and its log
// to eventsTTL past it.
type renewLockCall struct {
	lockKey   string
	logKey    string
	token     string
	lease     time.Duration
	eventsTTL time.Duration
}

func (renewLockCall) script() *redis.Script { return renewLockScript }
func (c renewLockCall) keys() []string      { return []string{c.lockKey, c.logKey} }
func (c renewLockCall) args() []any {
	return []any{c.token, c.lease.Milliseconds(), c.eventsTTL.Milliseconds()}
}

// historyPageCall reads a page of one branch (see PageRequest).
type historyPageCall struct {
	k         redisKeys
	principal string
	req       PageRequest
}

func (historyPageCall) script() *redis.Script { return historyPageScript }
func (c historyPageCall) keys() []string {
	return []string{c.k.thread, c.k.msgs, c.k.msgdata, c.k.hist, c.k.tree}
}
func (c historyPageCall) args() []any {
	return []any{c.principal, c.req.Limit, c.req.Before, c.req.Leaf}
}

// appendEventsCall appends a batch of events to running turn turnID's log,
// which then lives eventsTTL past its lock.
type appendEventsCall struct {
	lockKey   string
	logKey    string
	turnID    string
	eventsTTL time.Duration
	log       logBatch
}

func (appendEventsCall) script() *redis.Script { return appendEventsScript }
func (c appendEventsCall) keys() []string      { return []string{c.logKey, c.lockKey} }
func (c appendEventsCall) args() []any {
	return []any{c.turnID, c.eventsTTL.Milliseconds(), c.log.last, c.log.records}
}

// turnEventsCall reads turn turnID's log after the event with ID after;
// reading a running turn's log makes it live eventsTTL past its lock.
type turnEventsCall struct {
	k         redisKeys
	logKey    string
	principal string
	after     int
	turnID    string
	eventsTTL time.Duration
}

func (turnEventsCall) script() *redis.Script { return turnEventsScript }
func (c turnEventsCall) keys() []string      { return []string{c.k.thread, c.logKey, c.k.lock} }
func (c turnEventsCall) args() []any {
	return []any{c.principal, c.after, c.turnID, c.eventsTTL.Milliseconds()}
}

// luaBool is a flag as the scripts compare it: 1 or 0.
func luaBool(b bool) int {
	if b {
		return 1
	}
	return 0
}
