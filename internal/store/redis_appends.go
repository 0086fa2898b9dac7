package store

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxAppendBatch caps how many appends one pipeline carries, so that a
// batch's reply stays small and its first caller is not kept long.
const maxAppendBatch = 256

// appendBatchTimeout bounds one pipeline of appends.
const appendBatchTimeout = 5 * time.Second

// appendBatcher sends the turn-log appends of every turn on this instance
// in shared pipelines, in the manner of a group commit: an append that
// finds no pipeline on its way goes at once, alone; those that arrive while
// one is on its way wait for it and then go together in the next. An
// instance holding thousands of streams, each appending a few times a
// second, then makes a round trip (a write and a read on one connection)
// per batch rather than per append, and no append waits for a timer.
// Cluster sends each part of a pipeline to its node.
type appendBatcher struct {
	client redis.UniversalClient

	mu      sync.Mutex
	queue   []*queuedAppend
	sending bool // a drain goroutine is running
}

type queuedAppend struct {
	call appendEventsCall
	done chan error // buffered: the drain never waits for its caller
}

func newAppendBatcher(client redis.UniversalClient) *appendBatcher {
	return &appendBatcher{client: client}
}

// append sends c with the next batch and returns its outcome, or ctx's
// error if ctx ends first (the append may then still be made).
func (b *appendBatcher) append(ctx context.Context, c appendEventsCall) error {
	q := &queuedAppend{call: c, done: make(chan error, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, q)
	if !b.sending {
		b.sending = true
		go b.drain()
	}
	b.mu.Unlock()
	select {
	case err := <-q.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain sends batches until the queue is empty.
func (b *appendBatcher) drain() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), maxAppendBatch)
		if n == 0 {
			b.sending = false
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil // let the drained backing array go
		}
		b.mu.Unlock()
		b.send(batch)
	}
}

// send makes batch's appends in one pipeline and hands each its outcome.
// Appends the server answers NOSCRIPT (it lost its scripts) are sent again
// once the script is loaded: an append the server refused was not made.
func (b *appendBatcher) send(batch []*queuedAppend) {
	ctx, cancel := context.WithTimeout(context.Background(), appendBatchTimeout)
	defer cancel()
	cmds := b.pipeline(ctx, batch)
	var retry []*queuedAppend
	var retryAt []int
	for i, q := range batch {
		if redis.HasErrorPrefix(cmds[i].Err(), "NOSCRIPT") {
			retry, retryAt = append(retry, q), append(retryAt, i)
		}
	}
	if len(retry) > 0 {
		if err := appendEventsScript.Load(ctx, b.client).Err(); err != nil {
			for _, i := range retryAt {
				cmds[i].SetErr(err) // why the append was not made
			}
		} else {
			for j, cmd := range b.pipeline(ctx, retry) {
				cmds[retryAt[j]] = cmd
			}
		}
	}
	for i, q := range batch {
		q.done <- appendOutcome(cmds[i])
	}
}

func (b *appendBatcher) pipeline(ctx context.Context, batch []*queuedAppend) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(batch))
	_, err := b.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, q := range batch {
			cmds[i] = evalSha(ctx, pipe, q.call)
		}
		return nil
	})
	if err != nil {
		// A pipeline that never reached Redis (no connection to be had)
		// leaves its commands without a reply or an error of their own.
		for _, cmd := range cmds {
			if cmd.Err() == nil && cmd.Val() == nil {
				cmd.SetErr(err)
			}
		}
	}
	return cmds
}

func appendOutcome(cmd *redis.Cmd) error {
	const op = "append turn events"
	status, _, err := splitReply(op, cmd)
	if err != nil {
		return err
	}
	if status != "OK" {
		return unexpectedStatus(op, status)
	}
	return nil
}
