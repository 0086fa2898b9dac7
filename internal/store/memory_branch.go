package store

import (
	"context"
	"fmt"

	"chatd/internal/blocks"
)

// Memory's tree: each encodedMessage holds its parent's absolute position
// (-1 for none), children maps a position (-1 for the first messages) to
// its children's, oldest first, and head names the current branch's last
// message ("" for the newest).

// kept reports whether absolute position pos is in the history.
func (th *memThread) kept(pos int) bool { return pos >= th.base && pos < th.base+len(th.msgs) }

// at is the message at absolute position pos, which must be kept.
func (th *memThread) at(pos int) *encodedMessage { return &th.msgs[pos-th.base] }

// headPos is the position of the current branch's last message, -1 when
// the history is empty. A head trimmed away gives way to the newest.
func (th *memThread) headPos() int {
	if pos, ok := th.index[th.head]; ok && th.head != "" {
		return pos
	}
	if len(th.msgs) == 0 {
		return -1
	}
	return th.base + len(th.msgs) - 1
}

// headID is the current branch's last message's ID, "" when none.
func (th *memThread) headID() string {
	if pos := th.headPos(); pos >= 0 {
		return th.at(pos).id
	}
	return ""
}

// resolveBranch is the position a branch ends at: the head's for nil, -1
// for "" (none), else that message's.
func (th *memThread) resolveBranch(leaf *string) (int, error) {
	switch {
	case leaf == nil:
		return th.headPos(), nil
	case *leaf == "":
		return -1, nil
	}
	pos, ok := th.index[*leaf]
	if !ok {
		return 0, fmt.Errorf("store: message %q: %w", *leaf, ErrMessageNotFound)
	}
	return pos, nil
}

// walk returns up to n positions of the branch ending at leaf, oldest
// first; it stops at a first message or a trimmed parent.
func (th *memThread) walk(leaf, n int) []int {
	var out []int
	for pos := leaf; len(out) < n && th.kept(pos); pos = th.at(pos).parent {
		out = append(out, pos)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// branchWindow returns the newest n messages of the branch ending at leaf,
// oldest first, encoded.
func (th *memThread) branchWindow(leaf, n int) blocks.EncodedMessages {
	positions := th.walk(leaf, n)
	out := make(blocks.EncodedMessages, len(positions))
	for i, pos := range positions {
		out[i] = th.at(pos).data
	}
	return out
}

// link sets the parents of messages about to be appended: the first's is
// parent (nil: the head; "" or a message no longer held: none), each
// other's the one before it.
func (th *memThread) link(msgs []encodedMessage, parent *string) {
	p := th.headPos()
	if parent != nil {
		p = -1
		if pos, ok := th.index[*parent]; ok && *parent != "" {
			p = pos
		}
	}
	next := th.base + len(th.msgs)
	for i := range msgs {
		msgs[i].parent = p
		p = next + i
	}
}

// adopt records the message at pos as its parent's newest child.
func (th *memThread) adopt(pos, parent int) {
	if th.children == nil {
		th.children = make(map[int][]int)
	}
	th.children[parent] = append(th.children[parent], pos)
}

// orphan forgets the children of parent once its newest child, at pos, is
// trimmed: children are created after their parent and trimmed oldest
// first, so none of them is left.
func (th *memThread) orphan(pos, parent int) {
	if kids := th.children[parent]; len(kids) > 0 && kids[len(kids)-1] == pos {
		delete(th.children, parent)
	}
}

// latest is the latest descendant of pos: at each level its newest child.
func (th *memThread) latest(pos int) int {
	for {
		kids := th.children[pos]
		if len(kids) == 0 {
			return pos
		}
		pos = kids[len(kids)-1]
	}
}

// siblings returns the message at pos's stored siblings, itself included.
func (th *memThread) siblings(pos int) (Siblings, bool) {
	kids := th.children[th.at(pos).parent]
	if len(kids) < 2 {
		return Siblings{}, false
	}
	ids := make([]string, 0, len(kids))
	for _, k := range kids {
		if th.kept(k) {
			ids = append(ids, th.at(k).id)
		}
	}
	return siblingsOf(th.at(pos).id, ids)
}

// HistoryOf returns one page of a branch of the thread's history; see
// PageRequest. It returns ErrNotFound, or ErrUnknownCursor when Before or
// Leaf is not in the history.
func (m *Memory) HistoryOf(ctx context.Context, threadID, principal string, req PageRequest) (Page, error) {
	if err := checkPageRequest(req); err != nil {
		return Page{}, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	th, err := m.owned(threadID, principal, now)
	if err != nil {
		return Page{}, err
	}
	leaf := th.headPos()
	for _, id := range []string{req.Leaf, req.Before} {
		if id == "" {
			continue
		}
		pos, ok := th.index[id]
		if !ok {
			return Page{}, fmt.Errorf("store: cursor %q: %w", id, ErrUnknownCursor)
		}
		leaf = pos
		if id == req.Before {
			leaf = th.at(pos).parent
		}
	}
	positions := th.walk(leaf, req.Limit)
	page := Page{Messages: make([]blocks.Message, 0, len(positions))}
	for _, pos := range positions {
		msg, err := decodeMessage(th.at(pos).data)
		if err != nil {
			return Page{}, err
		}
		page.Messages = append(page.Messages, msg)
		if sib, ok := th.siblings(pos); ok {
			if page.Siblings == nil {
				page.Siblings = make(map[string]Siblings)
			}
			page.Siblings[msg.ID] = sib
		}
	}
	if len(positions) > 0 {
		parent := th.at(positions[0]).parent
		first := ""
		if th.kept(parent) {
			first = th.at(parent).id
			page.NextBefore = page.Messages[0].ID
		}
		fillParents(page.Messages, first)
	}
	return page, nil
}
