package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chatd/internal/store"
)

func newTestMemory(tb testing.TB, opts store.Options) contractStore {
	tb.Helper()
	st := store.NewMemory(opts)
	tb.Cleanup(func() { require.NoError(tb, st.Close()) })
	return st
}

func TestMemoryContract(t *testing.T) {
	runContract(t, newTestMemory)
}
