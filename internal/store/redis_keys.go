package store

import (
	"crypto/sha256"
	"encoding/hex"
)

// redisKeys are the keys of one thread. They share the hash tag {<id>}, so
// Cluster keeps them in one slot and a script may touch them all.
type redisKeys struct {
	thread, hist, tree, pending, elicitations, lock, idem, idemexp string
	// msgs and msgdata held history in the earlier layout; scripts convert
	// what they find there (see lua/lib/history.lua).
	msgs, msgdata string
}

func keysFor(threadID string) redisKeys {
	p := "chatd:{" + threadID + "}:"
	return redisKeys{
		thread:       p + "thread",
		hist:         p + "history",
		tree:         p + "tree",
		msgs:         p + "msgs",
		msgdata:      p + "msgdata",
		pending:      p + "pending",
		elicitations: p + "elicitations",
		lock:         lockKey(threadID),
		idem:         p + "idem",
		idemexp:      p + "idemexp",
	}
}

func (k redisKeys) all() []string {
	return []string{k.thread, k.hist, k.tree, k.msgs, k.msgdata, k.pending, k.elicitations, k.lock, k.idem, k.idemexp}
}

// lockKey is the key of the thread's running-turn lock: a streamed turn's
// appends, renewals and release use no other thread key, and build only
// this one on every call rather than all of keysFor's.
func lockKey(threadID string) string { return "chatd:{" + threadID + "}:lock" }

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
