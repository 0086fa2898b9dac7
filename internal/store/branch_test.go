package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// branchStore is a contract store that pages branches.
type branchStore interface {
	contractStore
	HistoryOf(ctx context.Context, threadID, principal string, req store.PageRequest) (store.Page, error)
}

var (
	_ branchStore = (*store.Memory)(nil)
	_ branchStore = (*store.Redis)(nil)
)

func TestMemoryBranches(t *testing.T) {
	runBranchContract(t, func(tb testing.TB, opts store.Options) branchStore {
		return newTestMemory(tb, opts).(branchStore)
	})
}

func TestRedisBranches(t *testing.T) {
	newStore := newTestRedisFunc(redistest.Start(t))
	runBranchContract(t, func(tb testing.TB, opts store.Options) branchStore {
		return newStore(tb, opts).(branchStore)
	})
}

func runBranchContract(t *testing.T, newStore func(tb testing.TB, opts store.Options) branchStore) {
	t.Run("Property", func(t *testing.T) {
		t.Parallel()
		// Every history limit: none to speak of, one that trims, and one that
		// trims past whole chunks of the Redis layout.
		for _, max := range []int{1000, 17, 90} {
			for seed := range uint64(4) {
				t.Run(fmt.Sprintf("max%d/seed%d", max, seed), func(t *testing.T) {
					opts := testOpts
					opts.HistoryMax = max
					testBranchProperty(t, newStore(t, opts), max, rand.New(rand.NewPCG(seed, uint64(max))), 120)
				})
			}
		}
	})
	t.Run("BadBranch", func(t *testing.T) {
		t.Parallel()
		testBadBranch(t, newStore(t, testOpts))
	})
}

// treeModel is the tree of a thread's history as the test keeps it: every
// message committed, in creation order, with the limit that trims it.
type treeModel struct {
	msgs []blocks.Message // ParentID set: what history must give back
	byID map[string]int
	head string
	max  int
	// implicit marks messages committed with a nil Commit.Parent: their
	// parent_id is known from the branch only while the parent is stored.
	implicit map[string]bool
}

func (m *treeModel) kept(id string) bool {
	i, ok := m.byID[id]
	return ok && i >= len(m.msgs)-m.max
}

func (m *treeModel) headID() string {
	if m.head != "" && m.kept(m.head) {
		return m.head
	}
	if len(m.msgs) == 0 {
		return ""
	}
	return m.msgs[len(m.msgs)-1].ID
}

// branch is the stored branch ending at leaf, oldest first.
func (m *treeModel) branch(leaf string) []blocks.Message {
	var out []blocks.Message
	for id := leaf; id != "" && m.kept(id); id = m.msgs[m.byID[id]].ParentID {
		msg := m.msgs[m.byID[id]]
		if m.implicit[id] && !m.kept(msg.ParentID) {
			msg.ParentID = ""
		}
		out = append([]blocks.Message{msg}, out...)
	}
	return out
}

// children are the stored children of parent ("" for the first messages).
func (m *treeModel) children(parent string) []string {
	var out []string
	for i, msg := range m.msgs {
		if msg.ParentID == parent && i >= len(m.msgs)-m.max {
			out = append(out, msg.ID)
		}
	}
	return out
}

func (m *treeModel) latest(id string) string {
	for {
		kids := m.children(id)
		if len(kids) == 0 {
			return id
		}
		id = kids[len(kids)-1]
	}
}

func (m *treeModel) add(msg blocks.Message, implicit bool) {
	m.byID[msg.ID] = len(m.msgs)
	m.msgs = append(m.msgs, msg)
	m.head = ""
	if implicit {
		m.implicit[msg.ID] = true
	}
}

// pick is a random stored message passing keep, "" when there is none.
func (m *treeModel) pick(rng *rand.Rand, keep func(blocks.Message) bool) string {
	var ids []string
	for i, msg := range m.msgs {
		if i >= len(m.msgs)-m.max && keep(msg) {
			ids = append(ids, msg.ID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return ids[rng.IntN(len(ids))]
}

// testBranchProperty runs random turns, edits, regenerates and head
// switches, and checks every branch read against the model: the same
// messages, byte for byte, parents, siblings and cursors.
func testBranchProperty(t *testing.T, st branchStore, historyMax int, rng *rand.Rand, steps int) {
	ctx := context.Background()
	th := mustCreateThread(t, st)
	m := &treeModel{byID: map[string]int{}, max: historyMax, implicit: map[string]bool{}}
	n := 0
	msg := func(role blocks.Role) blocks.Message {
		n++
		meta := map[string]any{"n": json1e400(n)}
		return blocks.NewMessage(role, fmt.Sprintf("%s %d", role, n), nil, meta)
	}
	commit := func(branch *string, parent *string, msgs ...blocks.Message) {
		window := rng.IntN(6)
		ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Window: window, Branch: branch})
		require.NoError(t, err)
		leaf := m.headID()
		if branch != nil {
			leaf = *branch
		}
		require.Equal(t, leaf, ts.Leaf)
		want := m.branch(leaf)
		want = want[max(0, len(want)-window):]
		assert.Equal(t, messageIDs(want), encodedIDs(t, ts.History), "the window is the branch's")
		require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, Owner: alice, LockToken: ts.LockToken, Messages: msgs, Parent: parent}))
		prev := leaf
		if parent != nil {
			prev = *parent
		}
		for i, msg := range msgs {
			msg.ParentID = prev
			m.add(msg, i == 0 && parent == nil)
			prev = msg.ID
		}
	}
	for range steps {
		switch op := rng.IntN(10); {
		case op < 3: // a turn on the head, its parent left to the store
			commit(nil, nil, msg(blocks.RoleUser), msg(blocks.RoleAssistant))
		case op < 5: // a turn after a chosen reply, or an edit of a user message
			parent := m.pick(rng, func(msg blocks.Message) bool { return msg.Role == blocks.RoleAssistant })
			if rng.IntN(3) == 0 {
				if id := m.pick(rng, func(msg blocks.Message) bool { return msg.Role == blocks.RoleUser }); id != "" {
					parent = m.msgs[m.byID[id]].ParentID
					if parent != "" && !m.kept(parent) {
						continue
					}
				}
			}
			commit(&parent, &parent, msg(blocks.RoleUser), msg(blocks.RoleAssistant))
		case op < 7: // a regenerated reply
			id := m.pick(rng, func(msg blocks.Message) bool {
				return msg.Role == blocks.RoleAssistant && m.kept(msg.ParentID)
			})
			if id == "" {
				continue
			}
			user := m.msgs[m.byID[id]].ParentID
			commit(&user, &user, msg(blocks.RoleAssistant))
		case op < 9: // a head switch
			id := m.pick(rng, func(blocks.Message) bool { return true })
			if id == "" {
				continue
			}
			got, err := st.UpdateThread(ctx, th.ID, alice, store.ThreadPatch{Head: id})
			require.NoError(t, err)
			m.head = m.latest(id)
			assert.Equal(t, m.head, got.HeadID)
		default: // a new first message
			root := ""
			commit(&root, &root, msg(blocks.RoleUser), msg(blocks.RoleAssistant))
		}
		checkBranches(t, st, th.ID, m, rng)
	}
}

// checkBranches reads the head's branch and another one, page by page.
func checkBranches(t *testing.T, st branchStore, threadID string, m *treeModel, rng *rand.Rand) {
	t.Helper()
	got, _, err := st.GetThread(context.Background(), threadID, alice)
	require.NoError(t, err)
	require.Equal(t, m.headID(), got.HeadID)
	leaves := []string{""}
	if id := m.pick(rng, func(blocks.Message) bool { return true }); id != "" {
		leaves = append(leaves, id)
	}
	for _, leaf := range leaves {
		want := m.branch(m.headID())
		if leaf != "" {
			want = m.branch(leaf)
		}
		limit := 1 + rng.IntN(7)
		var read []blocks.Message
		before := ""
		for {
			page, err := st.HistoryOf(context.Background(), threadID, alice, store.PageRequest{Limit: limit, Before: before, Leaf: leaf})
			require.NoError(t, err)
			for _, msg := range page.Messages {
				kids := m.children(m.msgs[m.byID[msg.ID]].ParentID)
				sib, ok := page.Siblings[msg.ID]
				if len(kids) < 2 {
					assert.False(t, ok, "message %s has no siblings", msg.ID)
					continue
				}
				if assert.True(t, ok, "message %s has siblings", msg.ID) {
					assert.Equal(t, kids, sib.IDs)
					assert.Equal(t, msg.ID, sib.IDs[sib.Index])
				}
			}
			read = append(page.Messages, read...)
			if page.NextBefore == "" {
				break
			}
			require.Equal(t, page.Messages[0].ID, page.NextBefore)
			before = page.NextBefore
		}
		require.Equal(t, messageJSON(t, want), messageJSON(t, read), "the branch ending at %q", leaf)
	}
}

// testBadBranch: a branch or head naming no message of the thread changes
// nothing and takes no lock.
func testBadBranch(t *testing.T, st branchStore) {
	ctx := context.Background()
	th := mustCreateThread(t, st)
	other := mustCreateThread(t, st)
	mustAppend(t, st, th.ID, 4)
	foreign := mustAppend(t, st, other.ID, 2)
	for _, id := range []string{blocks.NewID(), foreign[1].ID} {
		_, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Branch: &id})
		require.ErrorIs(t, err, store.ErrMessageNotFound)
		_, err = st.UpdateThread(ctx, th.ID, alice, store.ThreadPatch{Head: id, SetTitle: true, Title: &id})
		require.ErrorIs(t, err, store.ErrMessageNotFound)
		_, err = st.HistoryOf(ctx, th.ID, alice, store.PageRequest{Limit: 5, Leaf: id})
		require.ErrorIs(t, err, store.ErrUnknownCursor)
	}
	got, _, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Nil(t, got.Title, "a refused patch changes nothing")
	assert.Nil(t, got.Running, "a refused begin takes no lock")
	mustBegin(t, st, th.ID, 0)
}

// json1e400 is a number no float64 holds, which history must give back
// digit for digit.
func json1e400(n int) any { return json.Number(fmt.Sprintf("%de400", n)) }

func messageJSON(tb testing.TB, msgs []blocks.Message) []string {
	tb.Helper()
	out := make([]string, len(msgs))
	for i, msg := range msgs {
		b, err := msg.MarshalJSON()
		require.NoError(tb, err)
		out[i] = string(b)
	}
	return out
}

func encodedIDs(tb testing.TB, enc blocks.EncodedMessages) []string {
	tb.Helper()
	return messageIDs(mustDecode(tb, enc))
}

func TestRedisClusterBranches(t *testing.T) {
	c := redistest.StartCluster(t)
	runBranchContract(t, func(tb testing.TB, opts store.Options) branchStore {
		tb.Helper()
		st, err := store.OpenRedis(c.URL(), opts)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = st.Close() })
		return st
	})
}

// TestRedisEarlierRecordsOneBranch: records written before messages named
// their parents, in the earlier history layout too, read as one branch —
// each message's parent the one before it — and branch from there.
func TestRedisEarlierRecordsOneBranch(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := newServerClient(t, srv)
	st := newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, testOpts)
	th := mustCreateThread(t, st)
	prefix := "chatd:{" + th.ID + "}:"
	old := newTestMessages(6, "old")
	for i, m := range old {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		// The record as it was: no parent_id member at all.
		b = []byte(strings.Replace(string(b), `"parent_id":null,`, "", 1))
		require.NotContains(t, string(b), "parent_id")
		require.NoError(t, rdb.ZAdd(ctx, prefix+"msgs", redis.Z{Score: float64(1 + i), Member: m.ID}).Err())
		require.NoError(t, rdb.HSet(ctx, prefix+"msgdata", m.ID, b).Err())
	}
	require.NoError(t, rdb.HSet(ctx, prefix+"thread", "seq", len(old)).Err())

	got, _, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Equal(t, old[5].ID, got.HeadID)
	page, err := st.HistoryOf(ctx, th.ID, alice, store.PageRequest{Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, messageIDs(old[3:]), messageIDs(page.Messages))
	for i, m := range page.Messages {
		assert.Equal(t, old[2+i].ID, m.ParentID, "an earlier record's parent is the message before it")
	}

	// A regenerated reply to the last user message branches off.
	user := old[4].ID
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Window: 2, Branch: &user})
	require.NoError(t, err)
	assert.Equal(t, messageIDs(old[3:5]), encodedIDs(t, ts.History))
	reply := newTestMessages(2, "again")[1]
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: ts.LockToken, Messages: []blocks.Message{reply}, Parent: &user}))
	page, err = st.HistoryOf(ctx, th.ID, alice, store.PageRequest{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, append(messageIDs(old[:5]), reply.ID), messageIDs(page.Messages))
	assert.Equal(t, store.Siblings{Index: 1, IDs: []string{old[5].ID, reply.ID}}, page.Siblings[reply.ID])
	assert.Empty(t, page.Messages[0].ParentID)
}
