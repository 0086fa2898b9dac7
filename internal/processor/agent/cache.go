package agent

import (
	"bytes"
	"hash/maphash"
	"sync"

	"chatd/internal/blocks"
)

// historyCacheSize bounds the history messages an agent keeps converted:
// about two generations of this many entries, each its stored JSON and the
// model's view of it (together a few KiB at most).
const historyCacheSize = 4096

// historyCache keeps history messages converted for the model, keyed by
// their stored bytes. Every turn hands the agent its thread's last messages
// again, and a stored message never changes, so a thread's window is
// decoded once rather than on every turn. Keying by content rather than by
// message ID needs no trust in IDs and no invalidation; two generations
// bound the memory without bookkeeping per entry.
type historyCache struct {
	seed      maphash.Seed
	mu        sync.Mutex
	cur, prev map[uint64]cachedEntry
}

type cachedEntry struct {
	data  []byte
	entry historyEntry
}

func newHistoryCache() *historyCache {
	return &historyCache{seed: maphash.MakeSeed(), cur: map[uint64]cachedEntry{}}
}

// entries converts the history window, from the cache where it can.
func (c *historyCache) entries(enc blocks.EncodedMessages) ([]historyEntry, error) {
	out := make([]historyEntry, len(enc))
	for i, data := range enc {
		key := maphash.Bytes(c.seed, data)
		if e, ok := c.get(key, data); ok {
			out[i] = e
			continue
		}
		e, err := decodeEntry(data)
		if err != nil {
			return nil, err
		}
		c.put(key, data, e)
		out[i] = e
	}
	return out, nil
}

func (c *historyCache) get(key uint64, data []byte) (historyEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ce, ok := c.cur[key]
	if !ok {
		if ce, ok = c.prev[key]; ok {
			c.cur[key] = ce // still in use: keep it in the next generation
		}
	}
	if !ok || !bytes.Equal(ce.data, data) {
		return historyEntry{}, false
	}
	return ce.entry, true
}

func (c *historyCache) put(key uint64, data []byte, e historyEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cur) >= historyCacheSize {
		c.prev, c.cur = c.cur, make(map[uint64]cachedEntry, historyCacheSize)
	}
	// The store's bytes may be shared; the cache keeps its own copy.
	c.cur[key] = cachedEntry{data: bytes.Clone(data), entry: e}
}
