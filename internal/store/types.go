package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"chatd/internal/blocks"
)

// Sentinel errors. Every method wraps these with %w; the API maps them to
// HTTP statuses in one table.
var (
	// ErrNotFound: the thread does not exist, or belongs to another principal
	// (the two are indistinguishable on purpose).
	ErrNotFound = errors.New("thread not found")
	// ErrBusy: another turn holds the thread's turn lock.
	ErrBusy = errors.New("thread busy")
	// ErrElicitationPending: a plain turn was begun while an elicitation is
	// pending. The returned error is a *PendingError carrying it.
	ErrElicitationPending = errors.New("elicitation pending")
	// ErrElicitationNotFound: no elicitation with that ID was ever issued on
	// the thread.
	ErrElicitationNotFound = errors.New("elicitation not found")
	// ErrElicitationConsumed: the elicitation was already answered (its
	// answer committed). An answer still being processed is ErrBusy.
	ErrElicitationConsumed = errors.New("elicitation already consumed")
	// ErrElicitationExpired: the elicitation was issued but its pending state
	// expired before it was answered.
	ErrElicitationExpired = errors.New("elicitation expired")
	// ErrUnknownCursor: a history page was asked for before a message ID the
	// thread does not hold.
	ErrUnknownCursor = errors.New("unknown history cursor")
	// ErrLockLost: a commit, release or renewal named a lock token that no
	// longer holds the thread's lock (its lease lapsed, and another turn may
	// hold it now); nothing was written.
	ErrLockLost = errors.New("turn lock lost")
	// ErrUnavailable: the backing store cannot be reached, cannot serve right
	// now, or refuses this client's credentials or permissions.
	ErrUnavailable = errors.New("store unavailable")
	// ErrTurnNotFound: a turn's event log does not exist: the turn is
	// unknown, or its log has expired.
	ErrTurnNotFound = errors.New("turn not found")
	// ErrMetadataTooLarge: a thread patch would leave more metadata than
	// MaxMetadataKeys keys or MaxMetadataBytes bytes.
	ErrMetadataTooLarge = errors.New("thread metadata too large")
	// ErrFull: the embedded store holds Options.MemoryMaxBytes of data; it
	// takes no new thread or turn until what it holds expires (threads, turn
	// logs, idempotency records) or threads are deleted.
	ErrFull = errors.New("store full")
	// ErrQuotaExceeded: the principal already owns Options.MaxThreads live
	// threads.
	ErrQuotaExceeded = errors.New("thread quota exceeded")
	// ErrMessageNotFound: a branch, a head or a parent named a message the
	// thread does not hold (never held, or trimmed).
	ErrMessageNotFound = errors.New("message not found")
)

// Bounds of a thread's metadata, which any client may set: they keep the
// thread's record, read by every begin, small.
const (
	MaxMetadataKeys  = 16
	MaxMetadataBytes = 4096
)

// RunningError is returned by BeginTurn when another turn holds the thread
// and that turn was begun with the same idempotency key: it is the same
// request, still running. errors.Is(err, ErrBusy) holds.
type RunningError struct {
	TurnID      string
	Fingerprint string
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("turn %s with this idempotency key is still running", e.TurnID)
}

// Is reports ErrBusy as the error's kind.
func (e *RunningError) Is(target error) bool { return target == ErrBusy }

// PendingError is returned by BeginTurn when the thread has a pending
// elicitation; errors.Is(err, ErrElicitationPending) holds.
type PendingError struct {
	Pending Pending
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("elicitation %s pending until %s", e.Pending.ElicitationID, e.Pending.ExpiresAt.Format(time.RFC3339))
}

// Is reports ErrElicitationPending as the error's kind.
func (e *PendingError) Is(target error) bool { return target == ErrElicitationPending }

// ExpiredError is the error BeginResume returns for an elicitation whose
// pending state expired; errors.Is(err, ErrElicitationExpired) holds. First
// is set for the one resume that discovered the expiry (stores expire
// pending state silently), so an expiry can be counted once however often
// a late answer is retried. A re-sent call whose first send already recorded
// the expiry reports First false.
type ExpiredError struct {
	ID    string
	First bool
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("store: elicitation %s: %v", e.ID, ErrElicitationExpired)
}

// Is reports ErrElicitationExpired as the error's kind.
func (e *ExpiredError) Is(target error) bool { return target == ErrElicitationExpired }

// Thread is a conversation owned by one principal and bound to one processor.
type Thread struct {
	ID        string
	Owner     string
	Processor string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Title is nil until set by UpdateThread.
	Title *string
	// Metadata is the thread's string metadata, nil when it has none.
	Metadata map[string]string
	// Preview is the start of the thread's first user message, set by the
	// first commit that carries one (see CommitTurn.Preview).
	Preview string
	// Running is the turn holding the thread, when one does; it is read
	// from the turn lock and never written through a Thread.
	Running *RunningTurn
	// HeadID is the last message of the thread's current branch, empty
	// when the thread has none.
	HeadID string
}

// RunningTurn is a turn in progress on a thread.
type RunningTurn struct {
	ID        string
	StartedAt time.Time
}

// ThreadPatch changes a thread's title and metadata (RFC 7396 merge patch
// semantics, already decoded): a nil field is left alone.
type ThreadPatch struct {
	// SetTitle, when true, sets the title to Title (nil clears it).
	SetTitle bool
	Title    *string
	// ClearMetadata removes every key before Metadata is applied.
	ClearMetadata bool
	// Metadata maps keys to new values; a nil value deletes the key.
	Metadata map[string]*string
	// Head, when set, switches the current branch to the latest
	// descendant of that message (at each level its newest child); a
	// message the thread does not hold is ErrMessageNotFound, and nothing
	// changes.
	Head string
}

// ThreadState is a thread with its live pending elicitation (nil when none),
// as listed by ListThreads.
type ThreadState struct {
	Thread  Thread
	Pending *Pending
}

// ThreadList is one page of a principal's threads, most recently updated
// first. Next is the cursor of the next page, empty on the last.
type ThreadList struct {
	Threads []ThreadState
	Next    string
}

// TurnEvent is one event of a turn's log: its ID within the turn (1, 2, 3…),
// its name and its data, as a Server-Sent Events stream carries them. The
// store keeps the name and data as they are given, without reading them.
type TurnEvent struct {
	ID   int
	Name string
	Data []byte
	// Last marks the turn's last event: the log ends with it, and a reader
	// of the log is told it has ended (see TurnEvents).
	Last bool
}

// TurnBegin identifies the turn a begin starts and its first event, which
// the begin records in the turn's log.
type TurnBegin struct {
	ID string
	// Start is the turn's first event (ID 1).
	Start TurnEvent
	// Fingerprint identifies the request, for a retry with the same
	// idempotency key to find while the turn runs.
	Fingerprint string
}

// Pending is a thread's open elicitation: the request as the processor made
// it (the JSON of an elicit.Request), the processor's opaque state to resume
// from, and when it expires.
type Pending struct {
	ElicitationID string
	Request       json.RawMessage
	State         []byte
	ExpiresAt     time.Time
}

// Idempotency is a stored turn outcome for an Idempotency-Key: the
// fingerprint of the request body that produced it and the response to
// replay.
type Idempotency struct {
	Principal   string
	Key         string
	Fingerprint string
	Result      []byte
}

// BeginTurn asks to start a plain turn.
type BeginTurn struct {
	ThreadID  string
	Principal string
	// IdempotencyKey, when set, is looked up first: a stored record is
	// returned in TurnStart.Replay and no lock is taken.
	IdempotencyKey string
	// LockTTL bounds how long a crashed instance can wedge the thread.
	LockTTL time.Duration
	// Window is how many of the most recent messages to return (0: none).
	Window int
	// WindowByProcessor overrides Window for threads bound to the named
	// processors (most read less history, or none). The thread's processor
	// is only known inside the same atomic step, so the choice is made there.
	WindowByProcessor map[string]int
	// Turn is the turn begun; its log lives while the turn runs and
	// Options.TurnEventsTTL after.
	Turn TurnBegin
	// Branch, when set, names the message whose branch the turn follows:
	// the window is the newest messages of the branch ending there, and
	// TurnStart.Leaf is that message ("" for none: the turn starts a new
	// first message and reads no history). Unset, the branch is the
	// head's. A message the thread does not hold is ErrMessageNotFound,
	// checked after the lock and the pending elicitation and before the
	// lock is taken.
	Branch *string
}

// BeginResume asks to start the turn that answers an elicitation.
type BeginResume struct {
	ThreadID          string
	Principal         string
	ElicitationID     string
	LockTTL           time.Duration
	Window            int
	WindowByProcessor map[string]int
	Turn              TurnBegin
}

// windowFor is the window a thread bound to processor gets.
func windowFor(window int, byProcessor map[string]int, processor string) int {
	if n, ok := byProcessor[processor]; ok {
		window = n
	}
	return max(window, 0)
}

// TurnStart is what a begun turn holds: the thread, the lock token to commit
// or release with, and the recent history window (oldest first). For a
// resume, Pending is the elicitation being answered; for a plain turn whose
// idempotency key was seen before, Replay is set and nothing else is held.
type TurnStart struct {
	Thread    Thread
	LockToken string
	History   blocks.EncodedMessages
	Pending   *Pending
	Replay    *Idempotency
	// Leaf is the last message of the branch the window was read from
	// (the head, or BeginTurn.Branch), "" when that branch is empty: the
	// message a new one follows.
	Leaf string
}

// Commit is the outcome of a turn, written atomically with releasing its lock.
type Commit struct {
	ThreadID  string
	LockToken string
	// Messages are appended to history in order, each the child of the
	// one before it; the first is the child of Parent ("" for none: a new
	// first message), or of the head when Parent is nil. The last becomes
	// the head. Each is stored with its ParentID set accordingly.
	Messages []blocks.Message
	Parent   *string
	// Pause, when set, becomes the thread's pending elicitation (expiring at
	// Pause.ExpiresAt) and its ID is recorded as issued.
	Pause *Pending
	// Consumed, when set, is the elicitation ID this turn answered: its
	// pending state is deleted and the ID recorded as consumed.
	Consumed string
	// Idempotency, when set, is stored for IdempotencyTTL.
	Idempotency *Idempotency
	// Owner is the thread's owner, whose thread index the commit updates.
	Owner string
	// TurnID names the turn's log, to which Events (its last events) are
	// appended; the log then lives TurnEventsTTL. Start is the turn's first
	// event as its begin was given it: a log that holds nothing else yet is
	// written whole, Start then Events, in one write.
	TurnID string
	Start  TurnEvent
	Events []TurnEvent
	// Preview, when set, becomes the thread's preview unless it has one.
	Preview string
}

// ReleaseTurn ends a begun turn without writing its outcome; Events (an
// error event, say) are appended to the turn's log, which then lives
// TurnEventsTTL. Start is the turn's first event, as in Commit.
type ReleaseTurn struct {
	ThreadID  string
	LockToken string
	TurnID    string
	Start     TurnEvent
	Events    []TurnEvent
}

// Page is one page of history, oldest first. NextBefore is the page's oldest
// message ID when older messages exist, and empty otherwise.
type Page struct {
	Messages   []blocks.Message
	NextBefore string
	// Siblings are the alternatives of the page's messages that have any,
	// by message ID.
	Siblings map[string]Siblings
}

// Siblings are the stored messages that share a message's parent, in the
// order they were created, and the message's index among them.
type Siblings struct {
	Index int
	IDs   []string
}

// PageRequest asks for a page of one branch of a thread's history: the
// newest Limit messages before the message Before (none: from the leaf),
// along the branch ending at Leaf (none: the head). Before continues the
// branch it is on, whatever Leaf names.
type PageRequest struct {
	Limit  int
	Before string
	Leaf   string
}

// Options are the retention settings shared by both implementations.
type Options struct {
	// ThreadTTL is how long a thread lives after its last activity.
	ThreadTTL time.Duration
	// HistoryMax caps a thread's history; the oldest messages are trimmed.
	HistoryMax int
	// HistoryMaxBytes caps the stored bytes of a thread's history (the
	// messages' JSON); the oldest messages are trimmed to fit, though the
	// newest message is always kept.
	HistoryMaxBytes int64
	// MemoryMaxBytes caps the embedded store's data — history, pending
	// elicitations, idempotency records and turn logs (Memory only: Redis
	// has its own maxmemory); when it is reached, new threads and turns get
	// ErrFull.
	MemoryMaxBytes int64
	// MaxThreads caps the live threads one principal owns; CreateThread
	// beyond it returns ErrQuotaExceeded.
	MaxThreads int
	// FilesMaxBytes caps the bytes of the files one principal keeps
	// (PutFile beyond it returns ErrFileQuotaExceeded).
	FilesMaxBytes int64
	// IdempotencyTTL is how long an idempotency record is replayed.
	IdempotencyTTL time.Duration
	// TurnEventsTTL is how long a turn's event log outlives the turn.
	TurnEventsTTL time.Duration

	// WaitReplicas, for Redis only, is how many replicas must have a write
	// (a created thread, a commit, a deletion) before it is acknowledged:
	// the script is followed by WAIT in the same round trip. Fewer within
	// WaitTimeout is ErrUnavailable, the outcome unknown: the write is on
	// the master and is lost if that master fails before replicating it.
	// 0, the default, waits for none.
	WaitReplicas int
	// WaitTimeout bounds the WAIT when WaitReplicas > 0; keep it below the
	// client's read timeout.
	WaitTimeout time.Duration
	// Trace gives each Redis round trip made under a recording span a span
	// of its own; without it the client has no tracing hook at all.
	Trace bool
}

// DefaultOptions are the store's defaults, written here only: NewMemory,
// NewRedis and OpenRedis take them for the zero fields of their options.
var DefaultOptions = Options{
	ThreadTTL:       720 * time.Hour,
	HistoryMax:      1000,
	HistoryMaxBytes: 16 << 20,
	MemoryMaxBytes:  256 << 20,
	MaxThreads:      10000,
	FilesMaxBytes:   100 << 20,
	IdempotencyTTL:  24 * time.Hour,
	TurnEventsTTL:   10 * time.Minute,
	WaitTimeout:     time.Second,
}
