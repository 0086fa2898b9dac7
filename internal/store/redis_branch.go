package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"chatd/internal/blocks"
)

// HistoryOf returns one page of a branch of the thread's history; see
// PageRequest. It returns ErrNotFound, ErrUnknownCursor when Before or Leaf
// is not in the history, or ErrUnavailable.
func (r *Redis) HistoryOf(ctx context.Context, threadID, principal string, req PageRequest) (Page, error) {
	if err := checkPageRequest(req); err != nil {
		return Page{}, err
	}
	status, data, err := r.run(ctx, "history", historyPageCall{k: keysFor(threadID), principal: principal, req: req})
	if err != nil {
		return Page{}, err
	}
	switch status {
	case "OK":
	case "NOTFOUND":
		return Page{}, fmt.Errorf("store: thread %s: %w", threadID, ErrNotFound)
	case "BADCURSOR":
		return Page{}, fmt.Errorf("store: cursor %q %q: %w", req.Before, req.Leaf, ErrUnknownCursor)
	default:
		return Page{}, unexpectedStatus("history", status)
	}
	return pageFromReply(data)
}

// pageFromReply decodes history_page.lua's answer: more, the oldest
// message's parent ID, the count n, n siblings, then the messages.
func pageFromReply(data []any) (Page, error) {
	corrupt := errors.New("store: corrupt history reply")
	if len(data) < 3 {
		return Page{}, corrupt
	}
	more, _ := data[0].(int64)
	first, _ := replyString(data[1])
	n, ok := data[2].(int64)
	if !ok || n < 0 || int(n) > len(data)-3 {
		return Page{}, corrupt
	}
	sibs := data[3 : 3+n]
	msgs, err := messagesFromReply(data[3+n:])
	if err != nil {
		return Page{}, err
	}
	if len(msgs) != len(sibs) {
		return Page{}, corrupt
	}
	page := Page{Messages: msgs}
	for i, v := range sibs {
		s, _ := replyString(v)
		if s == "" {
			continue
		}
		sib, err := parseSiblings(s)
		if err != nil {
			return Page{}, err
		}
		if page.Siblings == nil {
			page.Siblings = make(map[string]Siblings)
		}
		page.Siblings[msgs[i].ID] = sib
	}
	fillParents(page.Messages, first)
	if more == 1 && len(msgs) > 0 {
		page.NextBefore = msgs[0].ID
	}
	return page, nil
}

// parseSiblings reads "<index>|<id>,<id>,…".
func parseSiblings(s string) (Siblings, error) {
	index, ids, ok := strings.Cut(s, "|")
	i, err := strconv.Atoi(index)
	list := strings.Split(ids, ",")
	if !ok || err != nil || i < 0 || i >= len(list) {
		return Siblings{}, fmt.Errorf("store: corrupt siblings %q", s)
	}
	return Siblings{Index: i, IDs: list}, nil
}

// branchFromReply decodes a begin's branch: its last message's ID, the
// head's, then the window's records.
func branchFromReply(data []any) (leaf, head string, history blocks.EncodedMessages, err error) {
	if len(data) < 2 {
		return "", "", nil, errors.New("store: corrupt begin reply")
	}
	leaf, _ = replyString(data[0])
	head, _ = replyString(data[1])
	history, err = encodedFromReply(data[2:])
	return leaf, head, history, err
}
