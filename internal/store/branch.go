package store

import (
	"fmt"

	"chatd/internal/blocks"
)

// A thread's history is a tree: every message follows its parent, the
// message before it in its branch, and a regenerated reply or an edited
// message is a sibling of the one it replaces. Nothing is overwritten; the
// thread's head says which branch is current. Both stores keep, per
// message, its parent's position in commit order, so a branch is read by
// walking back from its leaf in O(page), and the children of each parent
// that has more than one, for the siblings a page shows.

// withParents returns msgs with each message's ParentID set: the first
// message's to parent (left empty when parent is nil, the head at commit:
// reads fill it in from the branch), each other's to the message before it.
func withParents(msgs []blocks.Message, parent *string) []blocks.Message {
	out := make([]blocks.Message, len(msgs))
	for i, m := range msgs {
		switch {
		case i > 0:
			m.ParentID = out[i-1].ID
		case parent != nil:
			m.ParentID = *parent
		default:
			m.ParentID = ""
		}
		out[i] = m
	}
	return out
}

// fillParents sets the ParentID of branch messages read without one — the
// records of threads written before messages named their parents, and a
// first message committed after the head — to the message before it in the
// branch, and the oldest's to first (the ID of its parent, "" when it has
// none or it is not stored).
func fillParents(msgs []blocks.Message, first string) {
	for i := range msgs {
		if msgs[i].ParentID != "" {
			continue
		}
		if i > 0 {
			msgs[i].ParentID = msgs[i-1].ID
		} else {
			msgs[i].ParentID = first
		}
	}
}

// siblingsOf returns the Siblings of message id among ids (its parent's
// stored children, in creation order), and false when it has none.
func siblingsOf(id string, ids []string) (Siblings, bool) {
	if len(ids) < 2 {
		return Siblings{}, false
	}
	for i, s := range ids {
		if s == id {
			return Siblings{Index: i, IDs: ids}, true
		}
	}
	return Siblings{}, false
}

// checkPageRequest checks a page request's limit and the form of its IDs:
// a string that is no message ID names no message.
func checkPageRequest(req PageRequest) error {
	if err := checkLimit(req.Limit); err != nil {
		return err
	}
	for _, id := range []string{req.Before, req.Leaf} {
		if id != "" && !blocks.IsCanonicalID(id) {
			return fmt.Errorf("store: cursor %q: %w", id, ErrUnknownCursor)
		}
	}
	return nil
}
