package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Messages are delivered to the subscribers of a channel at most once, to
// those subscribed when they are published: there is no history. chatd uses
// them to reach the instance that holds something in memory (an MCP tool
// call waiting for the user's answer) from whichever instance received the
// request; the data itself lives in the store.

// Subscription receives the messages published on one channel until it is
// closed.
type Subscription struct {
	// C delivers the messages. It is closed when the subscription ends.
	C     <-chan []byte
	close func()
}

// Close ends the subscription; it is safe to call more than once.
func (s *Subscription) Close() { s.close() }

// Delivered counts of Publish.
const (
	// DeliveredUnknown means the message was sent but how many received it
	// cannot be known (Redis Cluster counts only one node's subscribers).
	DeliveredUnknown = -1
)

// LocalBus is publish/subscribe within one process, for an instance without
// Redis: every subscriber is in this process.
type LocalBus struct {
	mu   sync.Mutex
	subs map[string]map[*localSub]struct{}
}

type localSub struct {
	ch     chan []byte
	closed bool
}

// NewLocalBus returns an empty bus.
func NewLocalBus() *LocalBus {
	return &LocalBus{subs: map[string]map[*localSub]struct{}{}}
}

// localBuffer is how many messages a slow subscriber may fall behind before
// messages to it are dropped, as Redis drops a client whose output buffer
// overflows.
const localBuffer = 64

// Publish sends payload to the channel's subscribers and returns how many
// received it.
func (b *LocalBus) Publish(_ context.Context, channel string, payload []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for s := range b.subs[channel] {
		select {
		case s.ch <- append([]byte(nil), payload...):
			n++
		default:
		}
	}
	return n, nil
}

// Subscribe subscribes to channel; messages published after it returns are
// delivered.
func (b *LocalBus) Subscribe(_ context.Context, channel string) (*Subscription, error) {
	s := &localSub{ch: make(chan []byte, localBuffer)}
	b.mu.Lock()
	if b.subs[channel] == nil {
		b.subs[channel] = map[*localSub]struct{}{}
	}
	b.subs[channel][s] = struct{}{}
	b.mu.Unlock()
	return &Subscription{C: s.ch, close: func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if s.closed {
			return
		}
		s.closed = true
		delete(b.subs[channel], s)
		if len(b.subs[channel]) == 0 {
			delete(b.subs, channel)
		}
		close(s.ch)
	}}, nil
}

// RedisRelay is publish/subscribe over Redis: every instance sharing the
// Redis reaches every other.
type RedisRelay struct {
	client redis.UniversalClient
}

// Relay returns the relay between the instances sharing r's Redis, on r's
// client: closing r ends it.
func (r *Redis) Relay() *RedisRelay { return &RedisRelay{client: r.client} }

// Publish sends payload to the channel's subscribers on every instance
// sharing this Redis and returns how many received it, or DeliveredUnknown
// in Cluster, where PUBLISH counts only the subscribers of the node that
// ran it.
func (r *RedisRelay) Publish(ctx context.Context, channel string, payload []byte) (int, error) {
	n, err := r.client.Publish(ctx, channel, payload).Result()
	if err != nil {
		return 0, fmt.Errorf("%w: publish: %v", ErrUnavailable, err)
	}
	if _, cluster := r.client.(*redis.ClusterClient); cluster {
		return DeliveredUnknown, nil
	}
	return int(n), nil
}

// Subscribe subscribes to channel on Redis. It returns once Redis has
// confirmed the subscription, so a message published afterwards, from any
// instance, is delivered. go-redis resubscribes after a reconnection;
// messages published meanwhile are lost.
func (r *RedisRelay) Subscribe(ctx context.Context, channel string) (*Subscription, error) {
	ps := r.client.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("%w: subscribe: %v", ErrUnavailable, err)
	}
	out := make(chan []byte, localBuffer)
	done := make(chan struct{})
	go func() {
		defer close(out)
		msgs := ps.Channel()
		for {
			select {
			case <-done:
				return
			case m, ok := <-msgs:
				if !ok {
					return
				}
				select {
				case out <- []byte(m.Payload):
				case <-done:
					return
				}
			}
		}
	}()
	var once sync.Once
	return &Subscription{C: out, close: func() {
		once.Do(func() {
			close(done)
			_ = ps.Close()
		})
	}}, nil
}
