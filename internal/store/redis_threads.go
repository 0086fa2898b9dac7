package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

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
	status, _, err := r.runWrite(ctx, "create thread", createThreadCall{k: k, t: t, ttl: r.opts.ThreadTTL, callID: call},
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
	status, data, err := r.run(ctx, "get thread", getThreadCall{k: keysFor(threadID), principal: principal})
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
		return Thread{}, nil, fmt.Errorf("store: thread %s: short reply", threadID)
	}
	t.HeadID, _ = replyString(data[threadFields])
	if len(data) <= threadFields+1 {
		return t, nil, nil
	}
	p, err := pendingFromReply(data[threadFields+1])
	if err != nil {
		return Thread{}, nil, err
	}
	return t, p, nil
}

// DeleteThread removes the thread and every key it owns. It returns
// ErrNotFound when the thread does not exist or principal does not own it.
func (r *Redis) DeleteThread(ctx context.Context, threadID, principal string) error {
	status, reply, err := r.runWrite(ctx, "delete thread", deleteThreadCall{k: keysFor(threadID), principal: principal},
		func(pipe redis.Pipeliner) { pipe.ZRem(ctx, ownerKey(principal), threadID) })
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		r.freeThreadFiles(ctx, principal, threadID, reply)
		return nil
	case "NOTFOUND":
		return fmt.Errorf("store: thread %s: %w", threadID, ErrNotFound)
	}
	return unexpectedStatus("delete thread", status)
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

// UpdateThread applies patch to the principal's thread and returns it. It
// returns ErrNotFound, ErrMetadataTooLarge with nothing changed, or
// ErrUnavailable. Metadata is merged here and written only if it has not
// changed since it was read, so concurrent patches never lose a key.
func (r *Redis) UpdateThread(ctx context.Context, threadID, principal string, patch ThreadPatch) (Thread, error) {
	k := keysFor(threadID)
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
		call := updateThreadCall{k: k, principal: principal, metadataRead: read, metadata: next,
			setTitle: patch.SetTitle, title: patch.Title, updated: now, ttl: r.opts.ThreadTTL, head: patch.Head}
		status, data, err := r.runWithIndex(ctx, "update thread", call, r.touchIndex(principal, threadID, now, true))
		if err != nil {
			return Thread{}, err
		}
		switch status {
		case "OK":
			t, err := threadFromReply(threadID, data)
			if err == nil && len(data) > threadFields {
				t.HeadID, _ = replyString(data[threadFields])
			}
			return t, err
		case "NOMESSAGE":
			return Thread{}, fmt.Errorf("store: head %q: %w", patch.Head, ErrMessageNotFound)
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
	c, err := parseThreadCursor(cursor)
	if err != nil {
		return ThreadList{}, err
	}
	index := ownerKey(principal)
	var list ThreadList
	// after is the position to list from: the cursor's, then the last
	// thread listed; nil for the first page.
	var after *threadCursor
	if cursor != "" {
		after = &c
	}
	for {
		// One more than needed tells whether another page exists.
		want := limit - len(list.Threads) + 1
		ids, err := r.listIndex(ctx, listThreadsCall{index: index, count: want, after: after})
		if err != nil {
			return ThreadList{}, err
		}
		states, err := r.threadStates(ctx, principal, ids)
		if err != nil {
			return ThreadList{}, err
		}
		var stale []any
		for i, id := range ids {
			if states[i] == nil {
				stale = append(stale, id.id)
				continue
			}
			if len(list.Threads) == limit {
				list.Next = after.String()
				break
			}
			list.Threads = append(list.Threads, *states[i])
			after = &ids[i]
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

// listIndex reads a run of a principal's thread index: the threads' IDs
// and when they were last updated.
func (r *Redis) listIndex(ctx context.Context, c listThreadsCall) ([]threadCursor, error) {
	status, data, err := r.run(ctx, "list threads", c)
	if err != nil {
		return nil, err
	}
	if status != "OK" {
		return nil, unexpectedStatus("list threads", status)
	}
	var ids []threadCursor
	for i := 0; i+1 < len(data); i += 2 {
		id, _ := replyString(data[i])
		s, _ := replyString(data[i+1])
		ms, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("store: corrupt thread index score %q", s)
		}
		ids = append(ids, threadCursor{updated: int64(ms), id: id})
	}
	return ids, nil
}

// threadStates reads each thread in one pipeline; a thread that no longer
// exists (or is not principal's) is nil.
func (r *Redis) threadStates(ctx context.Context, principal string, ids []threadCursor) ([]*ThreadState, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if err := getThreadScript.Load(ctx, r.client).Err(); err != nil {
		return nil, wrapRedisError("list threads", err)
	}
	cmds := make([]*redis.Cmd, len(ids))
	_, err := r.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, c := range ids {
			cmds[i] = evalSha(ctx, pipe, getThreadCall{k: keysFor(c.id), principal: principal})
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
			st.Thread.HeadID, _ = replyString(data[threadFields])
		}
		if len(data) > threadFields+1 {
			if st.Pending, err = pendingFromReply(data[threadFields+1]); err != nil {
				return nil, err
			}
		}
		out[i] = st
	}
	return out, nil
}

// indexNew lists new thread t in its owner's index if the owner has fewer
// than MaxThreads listed.
func (r *Redis) indexNew(ctx context.Context, s redis.Scripter, t Thread) *redis.Cmd {
	c := indexNewCall{t: t, maxThreads: r.opts.MaxThreads, ttl: r.opts.ThreadTTL}
	return c.script().Eval(ctx, s, c.keys(), c.args()...)
}

// enforceQuota undoes the create of t when its owner already had MaxThreads
// live threads. The owner's index may still list threads that expired or
// were deleted by a crashed instance, so a full index offers a sample of
// its threads (the oldest, and some at random) to be checked (scripts, so
// the primary answers, not a replica behind on deletes), the dead ones
// dropped, and t listed again if there is room now. A refusal so costs a
// fixed number of commands, not one per thread the owner has; a dead
// thread outside the sample holds its place until a later refusal's
// sample finds it. Counting and listing are one script, so creates racing
// at the quota pass only as many as there is room for. A thread listed or
// updated in the last quotaGrace counts as live whatever its record says:
// a racing create may list its thread before writing it (the index and the
// thread are on different slots, and with WaitReplicas in different
// pipelines). An index that could not be reached is no reason to refuse a
// thread that was created: it is listed as best it can be, and the quota
// holds again from the next create.
func (r *Redis) enforceQuota(ctx context.Context, t Thread, listed *redis.Cmd) error {
	reply, err := listed.Slice()
	if err != nil {
		r.listAnyway(ctx, t)
		return nil
	}
	if len(reply) == 0 || reply[0] != "FULL" {
		return nil
	}
	dead, err := r.deadThreads(ctx, quotaSuspects(t, reply[1:]))
	if err != nil {
		return r.undoCreate(ctx, t, err)
	}
	if len(dead) > 0 {
		if _, _, err := r.run(ctx, "count threads", unindexCall{index: ownerKey(t.Owner), ids: dead}); err != nil {
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

// quotaSample is how many of a full index's oldest threads, and how many
// chosen at random, a refused create checks.
const quotaSample = 8

// quotaSuspects are the threads of a full index's sample (thread ID and
// score pairs) that may be dead: not t, listed or updated before
// quotaGrace, each once.
func quotaSuspects(t Thread, sample []any) []string {
	var ids []string
	seen := make(map[string]bool, len(sample)/2)
	recent := time.Now().Add(-quotaGrace).UnixMilli()
	for i := 0; i+1 < len(sample); i += 2 {
		member, _ := replyString(sample[i])
		score, _ := replyString(sample[i+1])
		ms, err := strconv.ParseFloat(score, 64)
		if member == t.ID || seen[member] || err != nil || int64(ms) >= recent {
			continue
		}
		seen[member] = true
		ids = append(ids, member)
	}
	return ids
}

// deadThreads returns those of ids whose thread no longer exists.
func (r *Redis) deadThreads(ctx context.Context, ids []string) ([]string, error) {
	if err := existsScript.Load(ctx, r.client).Err(); err != nil {
		return nil, wrapRedisError("count threads", err)
	}
	exists := make([]*redis.Cmd, len(ids))
	if _, err := r.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, id := range ids {
			exists[i] = evalSha(ctx, pipe, existsCall{k: keysFor(id)})
		}
		return nil
	}); err != nil {
		return nil, wrapRedisError("count threads", err)
	}
	var dead []string
	for i, c := range exists {
		if n, _ := c.Int64(); n == 0 {
			dead = append(dead, ids[i])
		}
	}
	return dead, nil
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
