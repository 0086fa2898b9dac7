package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"chatd/internal/blocks"
)

// Memory is the embedded store for a single process. It has the semantics of
// Redis: TTLs run on the wall clock, and one mutex makes every method atomic.
type Memory struct {
	opts Options
	now  func() time.Time

	mu        sync.Mutex
	threads   map[string]*memThread
	lastSweep time.Time
	// owners indexes threads by owner, for ListThreads.
	owners map[string]map[string]*memThread
	usage  usage
	// fs holds the threads' files.
	fs memFiles
}

// usage is the embedded store's account of the bytes it holds, against
// Options.MemoryMaxBytes. Whatever a client can make the store keep is
// charged when kept and released when dropped. New work (a thread, a turn)
// is admitted only while the account is under its bound; what admitted
// work then stores is charged whatever the balance, so a turn that began
// can always commit, and the store holds at most the bound plus what the
// work in flight adds.
type usage struct {
	max, used int64
}

// admit returns ErrFull once the store holds its bound.
func (u *usage) admit() error {
	if u.used >= u.max {
		return fmt.Errorf("store: %d of %d bytes used: %w", u.used, u.max, ErrFull)
	}
	return nil
}

// admitBytes returns ErrFull when n more bytes would take the store past
// its bound: a file is admitted whole or not at all.
func (u *usage) admitBytes(n int64) error {
	if u.used+n > u.max {
		return fmt.Errorf("store: %d of %d bytes used, %d more asked: %w", u.used, u.max, n, ErrFull)
	}
	return nil
}

// charge counts n more bytes held.
func (u *usage) charge(n int64) { u.used += n }

// release counts n bytes dropped.
func (u *usage) release(n int64) { u.used -= n }

// memThread holds everything a thread owns, so deleting it drops all of it.
type memThread struct {
	thread  Thread
	expires time.Time

	// msgs is the history in order; base is the absolute position of
	// msgs[0] (trimming advances it) and index maps a message ID to its
	// absolute position, so a page is found in O(1) and copied in O(page).
	msgs  []encodedMessage
	base  int
	index map[string]int
	// msgBytes is the size of msgs' JSON, against opts.HistoryMaxBytes.
	msgBytes int64
	// children and head make the history a tree (see memory_branch.go).
	children map[int][]int
	head     string

	pending    []byte // encoded pendingRecord; nil when none
	pendingID  string
	pendingExp time.Time

	// elicitations maps every issued elicitation ID to "issued" or "consumed".
	elicitations map[string]string

	lockToken string
	lockClaim string // elicitation ID a resume turn claimed, "" for a plain turn
	lockExp   time.Time
	// The turn holding the lock: its ID, start, and the idempotency field
	// and request fingerprint it was begun with.
	lockTurn        RunningTurn
	lockIdem        string
	lockFingerprint string

	idem      map[string]memIdempotency
	idemBytes int64

	turns map[string]*memTurnLog
	// turnOrder holds the logged turns' IDs in the order they began, for
	// sweepTurns.
	turnOrder []string
	// logBytes is the size of every log in turns.
	logBytes int64

	// held is what the store's usage has been charged for the thread: its
	// footprint when last settled (see Memory.settle).
	held int64
}

// memTurnLog is a turn's event log. changed is closed and replaced on every
// append, waking the readers waiting for more. A log ends with the turn's
// result, as large as its messages, and lives while the turn runs and
// TurnEventsTTL after: its bytes count against MemoryMaxBytes like the
// history's.
type memTurnLog struct {
	events  []TurnEvent
	bytes   int64
	expires time.Time
	changed chan struct{}
}

// add appends e to the log and returns the bytes it adds.
func (log *memTurnLog) add(e TurnEvent) int64 {
	log.events = append(log.events, e)
	n := int64(len(e.Name)+len(e.Data)) + recordOverhead
	log.bytes += n
	return n
}

// Fixed costs the footprint adds to the data itself: map and slice entries,
// IDs and headers. They are estimates; what matters is that the count grows
// with everything a client can make the store hold.
const (
	threadOverhead = 512
	recordOverhead = 96
)

// footprint estimates the memory the thread holds: its record (title,
// metadata, preview), history, pending elicitation, idempotency records and
// turn logs.
func (th *memThread) footprint() int64 {
	return threadOverhead + th.thread.recordBytes() + th.msgBytes + int64(len(th.msgs))*recordOverhead +
		int64(len(th.pending)) + th.idemBytes + int64(len(th.idem)+len(th.elicitations))*recordOverhead +
		th.logBytes + int64(len(th.turns))*recordOverhead
}

// recordBytes is the size of what a client sets on a thread record.
func (t Thread) recordBytes() int64 {
	n := len(t.Preview)
	if t.Title != nil {
		n += len(*t.Title)
	}
	for k, v := range t.Metadata {
		n += len(k) + len(v)
	}
	return int64(n)
}

// settle charges or releases what th's footprint has changed by since it
// was last settled; every method that changes what a thread holds calls
// it before returning. The caller holds m.mu.
func (m *Memory) settle(th *memThread) {
	n := th.footprint() - th.held
	th.held += n
	if n >= 0 {
		m.usage.charge(n)
	} else {
		m.usage.release(-n)
	}
}

// drop removes a thread; the caller holds m.mu.
func (m *Memory) drop(id string, th *memThread) {
	m.usage.release(th.held)
	th.held = 0
	m.dropFiles(id, th.thread.Owner)
	delete(m.threads, id)
	owned := m.owners[th.thread.Owner]
	delete(owned, id)
	if len(owned) == 0 {
		delete(m.owners, th.thread.Owner)
	}
}

type memIdempotency struct {
	data    []byte
	expires time.Time
}

// sweepEvery bounds how often expired threads are searched for; between
// sweeps they are dropped lazily when touched.
const sweepEvery = time.Minute

// NewMemory returns an empty in-memory store. Zero fields of opts take their
// DefaultOptions values.
func NewMemory(opts Options) *Memory {
	return &Memory{
		opts:    withDefaults(opts),
		usage:   usage{max: withDefaults(opts).MemoryMaxBytes},
		now:     time.Now,
		threads: make(map[string]*memThread),
		owners:  make(map[string]map[string]*memThread),
	}
}

// live returns the thread if it exists and has not expired; an expired one
// is dropped. The caller holds m.mu.
func (m *Memory) live(id string, now time.Time) *memThread {
	th, ok := m.threads[id]
	if !ok {
		return nil
	}
	if !now.Before(th.expires) {
		m.drop(id, th)
		return nil
	}
	return th
}

// owned returns the live thread if principal owns it.
func (m *Memory) owned(id, principal string, now time.Time) (*memThread, error) {
	th := m.live(id, now)
	if th == nil || th.thread.Owner != principal {
		return nil, fmt.Errorf("store: thread %s: %w", id, ErrNotFound)
	}
	return th, nil
}

// sweep drops, once every sweepEvery, the expired threads and what the
// live ones hold that has expired: turn logs and idempotency records of a
// thread no one touches would otherwise be held, and counted, until the
// thread expires.
func (m *Memory) sweep(now time.Time) {
	if now.Sub(m.lastSweep) < sweepEvery {
		return
	}
	m.lastSweep = now
	for id := range m.threads {
		if th := m.live(id, now); th != nil {
			th.sweepTurns(now)
			th.sweepIdempotency(now)
			m.settle(th)
		}
	}
}

func (th *memThread) lockHeld(now time.Time) bool {
	return th.lockToken != "" && now.Before(th.lockExp)
}

func (th *memThread) livePending(now time.Time) []byte {
	if th.pending != nil && now.Before(th.pendingExp) {
		return th.pending
	}
	return nil
}

func decodeAll(enc []encodedMessage) ([]blocks.Message, error) {
	out := make([]blocks.Message, 0, len(enc))
	for _, e := range enc {
		msg, err := decodeMessage(e.data)
		if err != nil {
			return nil, err
		}
		out = append(out, msg)
	}
	return out, nil
}

// lock takes the turn lock for turn and starts its event log, which lives
// while the lock may be held and eventsTTL after.
func (th *memThread) lock(ttl time.Duration, claim string, turn TurnBegin, idem string, eventsTTL time.Duration, now time.Time) (string, error) {
	token, err := newLockToken()
	if err != nil {
		return "", err
	}
	th.lockToken, th.lockClaim, th.lockExp = token, claim, now.Add(ttl)
	th.lockTurn = RunningTurn{ID: turn.ID, StartedAt: now.UTC().Truncate(time.Millisecond)}
	th.lockIdem, th.lockFingerprint = idem, turn.Fingerprint
	if turn.ID != "" {
		th.sweepTurns(now)
		log := &memTurnLog{expires: now.Add(ttl + eventsTTL), changed: make(chan struct{})}
		if turn.Start.Name != "" {
			log.add(turn.Start)
		}
		if old, ok := th.turns[turn.ID]; ok {
			th.logBytes -= old.bytes
		}
		th.turns[turn.ID] = log
		th.logBytes += log.bytes
		th.turnOrder = append(th.turnOrder, turn.ID)
	}
	return token, nil
}

func (th *memThread) unlock() {
	th.lockToken, th.lockClaim, th.lockExp = "", "", time.Time{}
	th.lockTurn, th.lockIdem, th.lockFingerprint = RunningTurn{}, "", ""
}

// view is the thread as reads return it, with the running turn if any.
func (th *memThread) view(now time.Time) Thread {
	t := th.thread
	t.HeadID = th.headID()
	if th.lockHeld(now) && th.lockTurn.ID != "" {
		running := th.lockTurn
		t.Running = &running
	}
	return t
}

// appendEvents adds events to a turn's log and wakes its readers; ttl, when
// positive, becomes the log's remaining life.
func (th *memThread) appendEvents(turnID string, events []TurnEvent, ttl time.Duration, now time.Time) {
	log, ok := th.turns[turnID]
	if !ok || !now.Before(log.expires) {
		return
	}
	if ttl > 0 && len(events) == 0 {
		// A turn that ends with no last event keeps no log: its readers
		// learn it is gone.
		th.dropLog(turnID)
		close(log.changed)
		return
	}
	last := 0
	if n := len(log.events); n > 0 {
		last = log.events[n-1].ID
	}
	for _, e := range events {
		// An event already logged (a re-sent append) is not logged twice.
		if e.ID > last {
			th.logBytes += log.add(e)
			last = e.ID
		}
	}
	if ttl > 0 {
		log.expires = now.Add(ttl)
	}
	close(log.changed)
	log.changed = make(chan struct{})
}

// sweepTurns drops expired logs, oldest first, and stops at the first live
// one: a begin costs the logs it drops, not every log the thread holds. A
// log that expires before an older one (which a renewed lease extended)
// waits for that one, unreadable meanwhile; the wait is bounded by the turn
// timeout.
func (th *memThread) sweepTurns(now time.Time) {
	n := 0
	for _, id := range th.turnOrder {
		if log, ok := th.turns[id]; ok && now.Before(log.expires) {
			break
		}
		th.dropLog(id)
		n++
	}
	// Re-slicing leaves the dropped IDs' space behind; append copies only
	// the live ones when it next grows the array.
	th.turnOrder = th.turnOrder[n:]
}

// dropLog drops a turn's log, if the thread holds it.
func (th *memThread) dropLog(turnID string) {
	if log, ok := th.turns[turnID]; ok {
		th.logBytes -= log.bytes
		delete(th.turns, turnID)
	}
}

// CreateThread stores a new thread. Zero timestamps are set to now.
func (m *Memory) CreateThread(ctx context.Context, t Thread) error {
	now := m.now()
	t, err := normalizeThread(t, now.UTC())
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	if m.live(t.ID, now) != nil {
		return fmt.Errorf("store: thread %s already exists", t.ID)
	}
	if err := m.usage.admit(); err != nil {
		return err
	}
	// A thread that expired leaves the owner's index when touched or at the
	// next sweep, and counts until then: checking every thread the owner
	// has would make each refusal cost as much as the quota is large.
	if len(m.owners[t.Owner]) >= m.opts.MaxThreads {
		return fmt.Errorf("store: principal owns %d threads: %w", m.opts.MaxThreads, ErrQuotaExceeded)
	}
	th := &memThread{
		thread:       t,
		expires:      now.Add(m.opts.ThreadTTL),
		index:        make(map[string]int),
		elicitations: make(map[string]string),
		idem:         make(map[string]memIdempotency),
		turns:        make(map[string]*memTurnLog),
	}
	m.threads[t.ID] = th
	if m.owners[t.Owner] == nil {
		m.owners[t.Owner] = make(map[string]*memThread)
	}
	m.owners[t.Owner][t.ID] = th
	m.settle(th)
	return nil
}

// GetThread returns the thread and its live pending elicitation (nil when
// none). It returns ErrNotFound when the thread does not exist or principal
// does not own it.
func (m *Memory) GetThread(ctx context.Context, threadID, principal string) (Thread, *Pending, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	th, err := m.owned(threadID, principal, now)
	if err != nil {
		return Thread{}, nil, err
	}
	return th.state(now)
}

// state is the thread as reads return it, with its live pending elicitation.
func (th *memThread) state(now time.Time) (Thread, *Pending, error) {
	p := th.livePending(now)
	if p == nil {
		return th.view(now), nil, nil
	}
	pending, err := decodePending(p)
	if err != nil {
		return Thread{}, nil, err
	}
	return th.view(now), pending, nil
}

// DeleteThread removes the thread and everything it owns. It returns
// ErrNotFound when the thread does not exist or principal does not own it.
func (m *Memory) DeleteThread(ctx context.Context, threadID, principal string) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	th, err := m.owned(threadID, principal, now)
	if err != nil {
		return err
	}
	m.drop(threadID, th)
	return nil
}

// BeginTurn starts a plain turn; see the package documentation for the order
// of its checks. It returns ErrNotFound, ErrBusy or a *PendingError.
func (m *Memory) BeginTurn(ctx context.Context, b BeginTurn) (TurnStart, error) {
	if err := checkLockTTL(b.LockTTL); err != nil {
		return TurnStart{}, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	// New work is admitted against what is held once what has expired is
	// dropped.
	m.sweep(now)
	th, err := m.owned(b.ThreadID, b.Principal, now)
	if err != nil {
		return TurnStart{}, err
	}
	field := ""
	if b.IdempotencyKey != "" {
		field = idempotencyField(b.Principal, b.IdempotencyKey)
		if rec, ok := th.idem[field]; ok && now.Before(rec.expires) {
			replay, err := decodeIdempotency(rec.data)
			if err != nil {
				return TurnStart{}, err
			}
			return TurnStart{Thread: th.view(now), Replay: replay}, nil
		}
	}
	if th.lockHeld(now) {
		if field != "" && th.lockIdem == field {
			return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID,
				&RunningError{TurnID: th.lockTurn.ID, Fingerprint: th.lockFingerprint})
		}
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrBusy)
	}
	if p := th.livePending(now); p != nil {
		pending, err := decodePending(p)
		if err != nil {
			return TurnStart{}, err
		}
		return TurnStart{}, &PendingError{Pending: *pending}
	}
	leaf, err := th.resolveBranch(b.Branch)
	if err != nil {
		return TurnStart{}, err
	}
	if err := m.usage.admit(); err != nil {
		return TurnStart{}, err
	}
	token, err := th.lock(b.LockTTL, "", b.Turn, field, m.opts.TurnEventsTTL, now)
	if err != nil {
		return TurnStart{}, err
	}
	m.settle(th)
	start := TurnStart{Thread: th.view(now), LockToken: token, History: th.branchWindow(leaf, windowFor(b.Window, b.WindowByProcessor, th.thread.Processor))}
	if leaf >= 0 {
		start.Leaf = th.at(leaf).id
	}
	return start, nil
}

// BeginResume starts the turn that answers elicitation b.ElicitationID by
// claiming it. It returns ErrNotFound, ErrBusy, ErrElicitationConsumed,
// ErrElicitationExpired or ErrElicitationNotFound.
func (m *Memory) BeginResume(ctx context.Context, b BeginResume) (TurnStart, error) {
	if err := checkLockTTL(b.LockTTL); err != nil {
		return TurnStart{}, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	// New work is admitted against what is held once what has expired is
	// dropped.
	m.sweep(now)
	th, err := m.owned(b.ThreadID, b.Principal, now)
	if err != nil {
		return TurnStart{}, err
	}
	if p := th.livePending(now); p != nil && th.pendingID == b.ElicitationID {
		if th.lockHeld(now) {
			// Another turn, or another answer's live claim: the claim lapses
			// with the lock's lease if its instance dies.
			return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrBusy)
		}
		pending, err := decodePending(p)
		if err != nil {
			return TurnStart{}, err
		}
		if err := m.usage.admit(); err != nil {
			return TurnStart{}, err
		}
		token, err := th.lock(b.LockTTL, b.ElicitationID, b.Turn, "", m.opts.TurnEventsTTL, now)
		if err != nil {
			return TurnStart{}, err
		}
		m.settle(th)
		return TurnStart{Thread: th.view(now), LockToken: token, History: th.branchWindow(th.headPos(), windowFor(b.Window, b.WindowByProcessor, th.thread.Processor)),
			Pending: pending, Leaf: th.headID()}, nil
	}
	state := th.elicitations[b.ElicitationID]
	if state == elicitationIssued {
		th.elicitations[b.ElicitationID] = elicitationExpired
	}
	return TurnStart{}, elicitationStateError(b.ElicitationID, state)
}

// elicitationStateError maps the recorded state of an elicitation that is not
// pending to the error a resume gets. An issued one is finding its expiry
// for the first time (the caller records it as expired).
func elicitationStateError(id, state string) error {
	switch state {
	case elicitationConsumed:
		return fmt.Errorf("store: elicitation %s: %w", id, ErrElicitationConsumed)
	case elicitationIssued:
		return &ExpiredError{ID: id, First: true}
	case elicitationExpired:
		return &ExpiredError{ID: id}
	default:
		return fmt.Errorf("store: elicitation %s: %w", id, ErrElicitationNotFound)
	}
}

// The recorded states of an elicitation ID.
const (
	elicitationIssued   = "issued"
	elicitationConsumed = "consumed"
	// elicitationExpired: issued, and a resume has found it expired.
	elicitationExpired = "expired"
)

// CommitTurn writes a turn's outcome and releases its lock, all or nothing.
// It returns ErrNotFound when the thread was deleted and ErrLockLost when
// c.LockToken no longer holds the lock.
func (m *Memory) CommitTurn(ctx context.Context, c Commit) error {
	rec, err := encodeCommit(c)
	if err != nil {
		return err
	}
	now := m.now()
	updated, err := parseTime(formatTime(now))
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.live(c.ThreadID, now)
	if th == nil {
		return fmt.Errorf("store: thread %s: %w", c.ThreadID, ErrNotFound)
	}
	if !th.lockHeld(now) || th.lockToken != c.LockToken {
		return fmt.Errorf("store: thread %s: %w", c.ThreadID, ErrLockLost)
	}
	th.link(rec.messages, c.Parent)
	th.appendHistory(rec.messages, m.opts.HistoryMax, m.opts.HistoryMaxBytes)
	th.settleElicitations(c.Consumed, c.Pause, rec.pause)
	th.putIdempotency(c.Idempotency, rec.idem, now, m.opts.IdempotencyTTL)
	if c.Preview != "" && th.thread.Preview == "" {
		th.thread.Preview = c.Preview
	}
	th.thread.UpdatedAt = updated
	th.expires = now.Add(m.opts.ThreadTTL)
	if c.TurnID != "" {
		th.appendEvents(c.TurnID, c.Events, m.opts.TurnEventsTTL, now)
	}
	th.unlock()
	m.settle(th)
	return nil
}

// commitRecords are a commit's messages, pause and idempotency record in
// their stored forms (nil when the commit has none).
type commitRecords struct {
	messages    []encodedMessage
	pause, idem []byte
}

func encodeCommit(c Commit) (commitRecords, error) {
	var rec commitRecords
	var err error
	if rec.messages, err = encodeMessages(withParents(c.Messages, c.Parent)); err != nil {
		return commitRecords{}, err
	}
	if c.Pause != nil {
		if rec.pause, err = encodePending(*c.Pause); err != nil {
			return commitRecords{}, err
		}
	}
	if c.Idempotency != nil {
		if rec.idem, err = encodeIdempotency(*c.Idempotency); err != nil {
			return commitRecords{}, err
		}
	}
	return rec, nil
}

// appendHistory appends msgs to the history (a message whose ID it holds
// replaces it in place) and trims the oldest beyond maxCount, then until
// the rest fits in maxBytes, keeping the newest message whatever its size.
func (th *memThread) appendHistory(msgs []encodedMessage, maxCount int, maxBytes int64) {
	for _, e := range msgs {
		if pos, ok := th.index[e.id]; ok {
			old := &th.msgs[pos-th.base]
			th.msgBytes += int64(len(e.data) - len(old.data))
			old.data = e.data
			continue
		}
		th.index[e.id] = th.base + len(th.msgs)
		th.adopt(th.base+len(th.msgs), e.parent)
		th.msgs = append(th.msgs, e)
		th.msgBytes += int64(len(e.data))
		// The reply a commit ends with is the head.
		th.head = ""
	}
	excess := max(len(th.msgs)-maxCount, 0)
	bytes := th.msgBytes
	for _, e := range th.msgs[:excess] {
		bytes -= int64(len(e.data))
	}
	for excess < len(th.msgs)-1 && bytes > maxBytes {
		bytes -= int64(len(th.msgs[excess].data))
		excess++
	}
	if excess == 0 {
		return
	}
	for i, e := range th.msgs[:excess] {
		delete(th.index, e.id)
		th.orphan(th.base+i, e.parent)
	}
	// Zero the dropped entries so their data can be collected before the
	// backing array is reallocated.
	clear(th.msgs[:excess])
	th.msgs = th.msgs[excess:]
	th.base += excess
	th.msgBytes = bytes
}

// settleElicitations records the elicitation a turn answered (consumed, ""
// for none) and makes pause, stored as record, the pending one.
func (th *memThread) settleElicitations(consumed string, pause *Pending, record []byte) {
	if consumed != "" {
		if th.pendingID == consumed {
			th.pending, th.pendingID, th.pendingExp = nil, "", time.Time{}
		}
		th.elicitations[consumed] = elicitationConsumed
	}
	if pause != nil {
		th.pending, th.pendingID, th.pendingExp = record, pause.ElicitationID, time.UnixMilli(pause.ExpiresAt.UnixMilli())
		th.elicitations[pause.ElicitationID] = elicitationIssued
	}
}

// putIdempotency drops the expired idempotency records and keeps rec,
// stored as record, for ttl.
func (th *memThread) putIdempotency(rec *Idempotency, record []byte, now time.Time, ttl time.Duration) {
	th.sweepIdempotency(now)
	if rec == nil {
		return
	}
	field := idempotencyField(rec.Principal, rec.Key)
	if old, ok := th.idem[field]; ok {
		th.idemBytes -= int64(len(old.data))
	}
	th.idem[field] = memIdempotency{data: record, expires: now.Add(ttl)}
	th.idemBytes += int64(len(record))
}

// sweepIdempotency drops the expired idempotency records.
func (th *memThread) sweepIdempotency(now time.Time) {
	for k, old := range th.idem {
		if !now.Before(old.expires) {
			th.idemBytes -= int64(len(old.data))
			delete(th.idem, k)
		}
	}
}

// Release ends a begun turn without writing its outcome, un-claiming the
// elicitation a resume claimed, and appends r.Events to the turn's log. It
// returns ErrLockLost when r.LockToken no longer holds the lock.
func (m *Memory) Release(ctx context.Context, r ReleaseTurn) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.live(r.ThreadID, now)
	if th == nil || !th.lockHeld(now) || th.lockToken != r.LockToken {
		return fmt.Errorf("store: thread %s: %w", r.ThreadID, ErrLockLost)
	}
	if r.TurnID != "" {
		th.appendEvents(r.TurnID, r.Events, m.opts.TurnEventsTTL, now)
	}
	th.unlock()
	m.settle(th)
	return nil
}

// AppendTurnEvents adds events to the log of a running turn. A log that has
// expired, or a deleted thread, takes nothing and is not an error: nobody
// can read it any more.
func (m *Memory) AppendTurnEvents(ctx context.Context, threadID, turnID string, events []TurnEvent) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if th := m.live(threadID, now); th != nil {
		th.appendEvents(turnID, events, 0, now)
		m.settle(th)
	}
	return nil
}

// TurnEvents returns the events of a turn's log after the one with ID
// after, oldest first, and whether the log has ended (holds its last
// event). When there are none yet and the log has not ended it waits up to
// wait for more. It returns ErrNotFound for a thread principal does not own
// and ErrTurnNotFound for a log that does not exist.
func (m *Memory) TurnEvents(ctx context.Context, threadID, principal, turnID string, after int, wait time.Duration) ([]TurnEvent, bool, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		events, changed, err := m.turnEvents(threadID, principal, turnID, after)
		if err != nil || len(events) > 0 || changed == nil {
			return events, changed == nil && err == nil, err
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, false, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// turnEvents reads a turn's log once; changed is nil when the log has ended.
func (m *Memory) turnEvents(threadID, principal, turnID string, after int) ([]TurnEvent, <-chan struct{}, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	th, err := m.owned(threadID, principal, now)
	if err != nil {
		return nil, nil, err
	}
	log, ok := th.turns[turnID]
	if !ok || !now.Before(log.expires) {
		return nil, nil, fmt.Errorf("store: turn %s: %w", turnID, ErrTurnNotFound)
	}
	var out []TurnEvent
	for _, e := range log.events {
		if e.ID > after {
			out = append(out, e)
		}
	}
	if n := len(log.events); n > 0 && log.events[n-1].Last {
		return out, nil, nil
	}
	return out, log.changed, nil
}

// UpdateThread applies patch to the principal's thread and returns it. It
// returns ErrNotFound, or ErrMetadataTooLarge with nothing changed.
func (m *Memory) UpdateThread(ctx context.Context, threadID, principal string, patch ThreadPatch) (Thread, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	th, err := m.owned(threadID, principal, now)
	if err != nil {
		return Thread{}, err
	}
	meta, err := mergeMetadata(th.thread.Metadata, patch)
	if err != nil {
		return Thread{}, err
	}
	if patch.Head != "" {
		pos, ok := th.index[patch.Head]
		if !ok {
			return Thread{}, fmt.Errorf("store: head %q: %w", patch.Head, ErrMessageNotFound)
		}
		th.head = th.at(th.latest(pos)).id
	}
	th.thread.Metadata = meta
	if patch.SetTitle {
		th.thread.Title = patch.Title
	}
	if th.thread.UpdatedAt, err = parseTime(formatTime(now)); err != nil {
		return Thread{}, err
	}
	th.expires = now.Add(m.opts.ThreadTTL)
	m.settle(th)
	return th.view(now), nil
}

// ListThreads returns a page of the principal's threads, most recently
// updated first, after cursor (empty for the first page). It returns
// ErrUnknownCursor for a cursor it did not mint.
func (m *Memory) ListThreads(ctx context.Context, principal string, limit int, cursor string) (ThreadList, error) {
	if limit < 1 {
		return ThreadList{}, fmt.Errorf("store: limit %d: must be positive", limit)
	}
	after, err := parseThreadCursor(cursor)
	if err != nil {
		return ThreadList{}, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []threadCursor
	for id, th := range m.owners[principal] {
		if m.live(id, now) == nil {
			continue
		}
		k := threadCursor{updated: th.thread.UpdatedAt.UnixMilli(), id: id}
		if cursor == "" || k.before(after) {
			keys = append(keys, k)
		}
	}
	sortThreadCursors(keys)
	var list ThreadList
	for i, k := range keys {
		if i == limit {
			list.Next = keys[i-1].String()
			break
		}
		t, p, err := m.threads[k.id].state(now)
		if err != nil {
			return ThreadList{}, err
		}
		list.Threads = append(list.Threads, ThreadState{Thread: t, Pending: p})
	}
	return list, nil
}

// History returns one page of the head's branch; see HistoryOf.
func (m *Memory) History(ctx context.Context, threadID, principal string, limit int, before string) (Page, error) {
	return m.HistoryOf(ctx, threadID, principal, PageRequest{Limit: limit, Before: before})
}

// Ping always succeeds: memory is always reachable.
func (m *Memory) Ping(ctx context.Context) error { return nil }

// Close drops every thread.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.threads = make(map[string]*memThread)
	m.owners = make(map[string]map[string]*memThread)
	m.usage.used = 0
	return nil
}

// RenewLock extends a running turn's lock lease to ttl from now, and its
// event log with it. It returns ErrLockLost when lockToken no longer holds
// the lock.
func (m *Memory) RenewLock(ctx context.Context, threadID, lockToken, turnID string, ttl time.Duration) error {
	if err := checkLockTTL(ttl); err != nil {
		return err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.live(threadID, now)
	if th == nil || !th.lockHeld(now) || th.lockToken != lockToken {
		return fmt.Errorf("store: thread %s: %w", threadID, ErrLockLost)
	}
	th.lockExp = now.Add(ttl)
	if log, ok := th.turns[turnID]; ok && now.Before(log.expires) {
		if until := th.lockExp.Add(m.opts.TurnEventsTTL); until.After(log.expires) {
			log.expires = until
		}
	}
	return nil
}
