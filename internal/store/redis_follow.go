package store

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// logWaiters shares the blocking reads that followers of turn logs wait on.
// However many clients follow one turn on an instance, one XREAD BLOCK waits
// for its log to grow, and what it reads is handed to them all: followers
// cost Redis one read per batch, not one each. Those reads run on a client
// of their own (see NewRedisFollowing), so followers never hold a
// connection of the pool that turns need for their lease renewals, commits
// and lists.
type logWaiters struct {
	client redis.UniversalClient

	mu   sync.Mutex
	logs map[string]*watchedLog
}

// watchedLog is one followed log: its current round of waiters, woken
// together when the log grows past the lowest event ID any of them has, and
// what the reads of it have shown, so that a follower that has every event
// so far need not read the log again before it waits: the principals whose
// hold on the thread a read of the log has checked (a thread never changes
// hands), the last event ID seen, and whether that was the turn's last.
type watchedLog struct {
	round   *waitRound
	joined  chan struct{} // a waiter joined; capacity 1
	checked map[string]bool
	latest  int
	ended   bool
}

type waitRound struct {
	waiters int
	from    int // the lowest event ID a waiter of this round has
	// read is the ID the round's read began after: what it finds serves
	// the waiters that have that event, not one that joined with an older
	// one while it ran.
	read int
	grew chan struct{} // closed when the read of this round is done
	// Set before grew is closed: the events the read found after from, or
	// failed when it found none it could hand out (the read failed, or the
	// log is no longer a stream): the waiters then read the log themselves.
	events []TurnEvent
	failed bool
}

func newWaitRound() *waitRound { return &waitRound{from: math.MaxInt, grew: make(chan struct{})} }

func newLogWaiters(client redis.UniversalClient) *logWaiters {
	return &logWaiters{client: client, logs: map[string]*watchedLog{}}
}

// wait returns the events of the stream at key after event ID after, once
// there are some, waiting at most d; ok is false when it returns without
// them (d passed, ctx ended, or the shared read failed), and the caller
// reads the log itself to learn why. The events are shared with the log's
// other followers and must not be modified.
func (w *logWaiters) wait(ctx context.Context, key string, after int, d time.Duration) (events []TurnEvent, ok bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		round := w.join(key, after)
		select {
		case <-round.grew:
		case <-timer.C:
			w.leave(round)
			return nil, false
		case <-ctx.Done():
			w.leave(round)
			return nil, false
		}
		if round.failed || after < round.read {
			return nil, false
		}
		if events := eventsAfter(round.events, after); len(events) > 0 {
			return events, true
		}
		// The read served a waiter further behind: wait for the next.
	}
}

// join adds a waiter for events after after to key's current round,
// starting the log's shared read if nobody waits for it yet.
func (w *logWaiters) join(key string, after int) *waitRound {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.watched(key)
	l.round.waiters++
	l.round.from = min(l.round.from, after)
	select {
	case l.joined <- struct{}{}:
	default:
	}
	return l.round
}

// watched returns key's watchedLog, starting its read; the caller holds mu.
func (w *logWaiters) watched(key string) *watchedLog {
	l := w.logs[key]
	if l == nil {
		l = &watchedLog{round: newWaitRound(), joined: make(chan struct{}, 1), checked: map[string]bool{}}
		w.logs[key] = l
		go w.watch(key, l)
	}
	return l
}

// checked records that a read of the log at key, as principal, found it a
// running turn's stream with nothing after event ID after.
func (w *logWaiters) checked(key, principal string, after int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.watched(key)
	l.checked[principal] = true
	l.latest = max(l.latest, after)
}

// current reports whether a follower, as principal, with every event up to
// after, has everything the log held when last read, as far as this
// instance knows: it may then wait without reading the log first.
func (w *logWaiters) current(key, principal string, after int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.logs[key]
	return l != nil && l.checked[principal] && !l.ended && after >= l.latest
}

func (w *logWaiters) leave(round *waitRound) {
	w.mu.Lock()
	round.waiters--
	w.mu.Unlock()
}

// eventsAfter is the tail of events (in ID order) after ID after.
func eventsAfter(events []TurnEvent, after int) []TurnEvent {
	for i, e := range events {
		if e.ID > after {
			return events[i:]
		}
	}
	return nil
}

// watchBlock bounds one shared read, so a waiter that joined with an older
// event ID than the read's is served within it, and a log nobody waits for
// any more is let go.
const watchBlock = 2 * time.Second

// watch is the one blocking read of a followed log, repeated while anyone
// waits for it.
func (w *logWaiters) watch(key string, l *watchedLog) {
	linger := time.NewTimer(watchLinger)
	defer linger.Stop()
	idle := false
	for {
		w.mu.Lock()
		round := l.round
		if round.waiters == 0 {
			if idle {
				delete(w.logs, key)
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			// Its followers are on their way back, having written what
			// the last read brought: keep what is known of the log for
			// them a while.
			linger.Reset(watchLinger)
			select {
			case <-l.joined:
			case <-linger.C:
				idle = true
			}
			continue
		}
		idle = false
		from := round.from
		round.read = from
		w.mu.Unlock()

		streams, err := w.client.XRead(context.Background(), &redis.XReadArgs{
			Streams: []string{key, "0-" + strconv.Itoa(from)}, Block: watchBlock,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue // nothing new: read again, from the round's lowest ID
		}
		var events []TurnEvent
		if err == nil {
			events, err = streamEvents(streams, from)
		}
		w.mu.Lock()
		round.events, round.failed = events, err != nil || len(events) == 0
		if n := len(events); n > 0 {
			l.latest = max(l.latest, events[n-1].ID)
			l.ended = l.ended || events[n-1].Last
		}
		close(round.grew)
		l.round = newWaitRound()
		w.mu.Unlock()
		if err != nil {
			time.Sleep(watchRetry)
		}
	}
}

// streamEvents reads the events after ID after from the entries of an
// XREAD reply (see add_events in the scripts).
func streamEvents(streams []redis.XStream, after int) ([]TurnEvent, error) {
	var out []TurnEvent
	for _, st := range streams {
		for _, m := range st.Messages {
			records, _ := m.Values["r"].(string)
			var err error
			if out, err = appendEventsAfter(out, records, &after); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// watchLinger is how long a followed log's read outlives its last waiter.
const watchLinger = time.Second

// watchRetry spaces the reads of a log whose read failed (Redis down, the
// follow pool exhausted), so a failing read does not spin.
const watchRetry = 100 * time.Millisecond
