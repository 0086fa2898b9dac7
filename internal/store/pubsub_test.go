package store_test

import (
	"context"
	"testing"

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
	for name, b := range map[string]bus{"local": store.NewLocalBus(), "redis": r} {
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
			n, err = b.Publish(ctx, "chatd:test:a", []byte("late"))
			require.NoError(t, err)
			assert.Equal(t, 0, n)
		})
	}
}
