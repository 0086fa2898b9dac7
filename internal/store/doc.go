// Package store persists chatd's threads, their history, pending
// elicitations, turn locks and idempotency records.
//
// Two implementations have the same methods and the same semantics, checked
// by one contract test suite: Memory, embedded in a single process, and
// Redis, shared by any number of instances through a redis.UniversalClient
// (one node, Sentinel or Cluster; see OpenRedis). go-redis is imported by this
// package only.
//
// # Turns
//
// A turn is BeginTurn (or BeginResume) followed by exactly one of CommitTurn
// or Release. Beginning takes the thread's turn lock, a random token with a
// TTL (BeginTurn.LockTTL, the turn timeout), so turns on a thread are
// serialized and a crashed instance wedges a thread for at most that long.
// CommitTurn writes the whole outcome — messages, pending elicitation,
// consumed elicitation, idempotency record — and releases the lock in one
// atomic step, and only while the token still holds the lock: a turn whose
// lock expired writes nothing (ErrLockLost).
//
// BeginTurn checks, in this order: the thread exists and the principal owns
// it (else ErrNotFound, the same answer for both); a live idempotency record
// for (principal, key) on this thread is returned as TurnStart.Replay without
// locking; a held lock is ErrBusy; a live pending elicitation is a
// *PendingError; otherwise the lock is taken.
//
// BeginResume answers an elicitation. While its ID is pending and unclaimed,
// the resume claims it by taking the lock; a second answer while the claim's
// lock is held gets ErrElicitationConsumed, so of concurrent duplicate
// answers exactly one wins. A claim lives exactly as long as its lock:
// Release or lock expiry leaves the elicitation pending again, so a failed
// processor or an invalid answer does not lose the question. Otherwise the
// ID's record decides: consumed → ErrElicitationConsumed, issued but no
// longer pending → ErrElicitationExpired, never issued →
// ErrElicitationNotFound. These records live as long as the thread, after
// the pending state's TTL has fired.
//
// History is kept in commit order, which the turn lock makes the order turns
// happened in; IDs do not order it, so IDs minted on instances with skewed
// clocks cannot reorder it. The oldest messages beyond Options.HistoryMax are
// trimmed at commit. A page is found from its cursor in O(log n) and read in
// O(page).
//
// # Redis key layout
//
// Every key of a thread carries the hash tag {<thread id>}, so Cluster keeps
// them in one slot and one script may touch them all:
//
//	chatd:{T}:thread        hash: owner, processor, created, updated (RFC 3339,
//	                        nanoseconds), seq (last history position used),
//	                        create_call, last_commit (call IDs of the
//	                        create and of the latest commit), bytes (size
//	                        of the history's JSON, against HistoryMaxBytes),
//	                        hfirst (oldest history position kept), hmax
//	                        (greatest message ID so far), hooo (IDs out of
//	                        order)
//	chatd:{T}:history       hash: the messages' JSON, sealed 32 positions
//	                        to a field, newline-separated, with each
//	                        chunk's greatest ID and record lengths; the
//	                        newest 64–95 messages one to a field with their
//	                        position by ID; positions of IDs minted out of
//	                        order (see lua/lib/history.lua). About 1.1×
//	                        the JSON, against 2.1× for a sorted set plus a
//	                        hash entry per message
//	chatd:{T}:pending       hash: id, data (JSON: request, base64 state,
//	                        expires_at ms); expires at the elicitation's expiry
//	chatd:{T}:elicitations  hash: elicitation ID → "issued" | "consumed"
//	chatd:{T}:lock          string "<token>|<claimed elicitation ID>|<turn
//	                        ID>|<started ms>|<fingerprint>|<length>|<first
//	                        event's record><idempotency field>"; PX LockTTL
//	chatd:{T}:turn:<id>     the turn's event log, as records (see below): a
//	                        stream (an entry per batch, field r; the last
//	                        entry, written by the commit or release,
//	                        repeats the first event before the last ones,
//	                        and readers skip it) once an append or a
//	                        waiting reader needs one while the turn runs,
//	                        else one string written when the turn ends;
//	                        lives TurnEventsTTL after it
//	chatd:{T}:idem          hash: "<len(principal)>:<principal>:<key>" → record JSON
//	chatd:{T}:idemexp       sorted set: the same fields scored by expiry (ms)
//	chatd:{T}:files         hash: file ID → size, the thread's files
//	chatd:{T}:file:<id>     hash: r (the file's record JSON), n (its number
//	                        of pieces) and 0…n-1, its bytes in pieces that
//	                        each fill an allocator size class, so a file of
//	                        16 KiB or more takes at most 1.05× its size
//	                        (fileChunks); expires with the thread, and
//	                        commits refresh it with the thread
//
// A principal's file quota is chatd:{p:<digest>}:files, on the principal's
// slot: a hash of "<thread ID>/<file ID>" → size, and total. An upload
// counts its file there before writing it; a deletion frees it after. A
// file that expired with its thread, or whose freeing did not arrive, is
// reclaimed when the quota is next reached (the file's key no longer
// exists).
//
// A turn log's record is one event, its name and data as the caller gave
// them, which the store does not read:
//
//	<id> <name> <length>\n<data>        an event
//	<id> <name> <length> last\n<data>   the turn's last event (TurnEvent.Last)
//
// A log has ended when it holds its turn's last event, or when it is a
// string (written whole when the turn ended). Logs written before records
// carried the last flag end with an event named turn.completed or error
// instead, which readers take for the last.
//
// Threads written before the history key existed keep their history in
// chatd:{T}:msgs (a sorted set of IDs by position) and chatd:{T}:msgdata (a
// hash of JSON); the first script that reads or writes such a history
// converts it, once, so no migration step is needed.
//
// Redis 7.0 has no per-field hash TTL, so idempotency expiry is the idemexp
// score: a lookup ignores an expired record, and a commit that adds one
// deletes the expired ones and gives both keys the longer of ThreadTTL and
// IdempotencyTTL. Each commit refreshes Options.ThreadTTL on the thread, its
// history and its elicitations; the lock is released and the pending state
// has its own expiry, capped at the thread's.
//
// # Atomicity and round trips
//
// Every operation is a single Lua script (EVALSHA, falling back to EVAL the
// first time a server sees it), one file each in lua/, which name their keys
// and arguments at their top; the helpers they share are in lua/lib/, and
// each script is sent with only those it calls. Redis runs a script without
// interleaving any other client's commands, so each check-then-write — owner
// check, claim, lock compare-and-delete, append-trim-pause-release — is
// atomic, and each operation costs one round trip: a turn's store work is
// two (begin, then commit or release). Scripts read the time from Redis (TIME) for
// idempotency expiry, so instances' clocks do not matter there.
//
// # Retries
//
// go-redis re-sends a command whose reply does not arrive within ReadTimeout
// (up to MaxRetries times), and the first send may well have run: Redis was
// slow, not deaf. So every script is idempotent per call — run twice with
// the same arguments, the second run writes nothing more and answers as the
// first did. A begin's lock token and a create's or commit's random call ID
// are minted once per method call, before the script is sent, so a re-send
// carries the same one, and no other call does: a second CommitTurn with an
// already committed token, or a second CreateThread of an existing thread,
// is refused as before.
//
//   - BeginTurn and BeginResume finding the lock held by their own token
//     (and, for a resume, claiming the same elicitation) answer OK with the
//     same thread and window, instead of ErrBusy or ErrElicitationConsumed
//     that would leave the thread locked for the lock's TTL.
//   - CommitTurn records its call ID as the thread's last_commit; a commit
//     whose token no longer holds the lock but whose call ID is last_commit
//     was already applied, and answers OK instead of ErrLockLost — which
//     would tell the client nothing was kept while the turn is in history.
//     Only the latest commit is remembered: a re-send arriving after another
//     turn has begun and committed still gets ErrLockLost.
//   - CreateThread records its call ID as create_call; finding the thread
//     with its own call ID answers OK instead of an "already exists" error.
//   - Release repeated after it succeeded answers ErrLockLost: the state is
//     the same, and a release's error changes nothing for its caller.
//   - DeleteThread repeated after it succeeded answers ErrNotFound, with the
//     same end state; GetThread and History only read.
//
// Memory runs each operation exactly once and needs none of this.
//
// # Errors
//
// Errors that mean Redis cannot be reached or cannot serve (network errors,
// timeouts, a closed pool, LOADING, CLUSTERDOWN, TRYAGAIN, MASTERDOWN,
// READONLY, a MOVED or ASK still unresolved after the client's redirects,
// …) or refuses this client by configuration (NOAUTH, WRONGPASS,
// NOPERM: credentials or ACL) match ErrUnavailable with errors.Is and keep
// their cause in the chain; a cancelled context does not. None of them is a
// request's fault, so the API answers 503 and readiness fails rather than
// reporting an internal error. The client reconnects by itself once Redis is
// back.
package store
