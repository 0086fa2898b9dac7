package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
	"chatd/internal/store"
)

// bus is what both pub/sub implementations offer.
type bus interface {
	Publish(ctx context.Context, channel string, payload []byte) (int, error)
	Subscribe(ctx context.Context, channel string) (*store.Subscription, error)
}

func TestPubSub(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(srv.URL(), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	for name, b := range map[string]bus{"local": store.NewLocalBus(), "redis": r.Relay()} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			n, err := b.Publish(ctx, "chatd:test:a", []byte("nobody"))
			require.NoError(t, err)
			assert.Equal(t, 0, n, "no subscriber, no delivery")

			sub, err := b.Subscribe(ctx, "chatd:test:a")
			require.NoError(t, err)
			other, err := b.Subscribe(ctx, "chatd:test:b")
			require.NoError(t, err)
			defer other.Close()
			n, err = b.Publish(ctx, "chatd:test:a", []byte("hello"))
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, []byte("hello"), <-sub.C)

			sub.Close()
			sub.Close() // twice is fine
			_, open := <-sub.C
			assert.False(t, open, "closing ends the channel")
			// Redis drops a closed subscriber when it reads the closed
			// connection, which may come after a PUBLISH sent from another
			// connection at once: the count reaches 0, not at a fixed moment.
			assert.Eventually(t, func() bool {
				n, err := b.Publish(ctx, "chatd:test:a", []byte("late"))
				return err == nil && n == 0
			}, 10*time.Second, 10*time.Millisecond, "a closed subscription stops counting as a subscriber")
		})
	}
}
