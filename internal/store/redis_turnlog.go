package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AppendTurnEvents adds events to the log of a running turn, in one round
// trip that the appends of other turns on this instance may share
// (appendBatcher). A log that has expired takes nothing and is not an error.
func (r *Redis) AppendTurnEvents(ctx context.Context, threadID, turnID string, events []TurnEvent) error {
	return r.appends.append(ctx, appendEventsCall{lockKey: lockKey(threadID), logKey: turnKey(threadID, turnID),
		turnID: turnID, eventsTTL: r.opts.TurnEventsTTL, log: newLogBatch(TurnEvent{}, events)})
}

// TurnEvents returns the events of a turn's log after the one with ID
// after, oldest first, and whether the log has ended (holds its last
// event, or was written whole when its turn ended). When there are none yet
// and the log has not ended it waits up to wait for more. The wait shares
// one XREAD BLOCK with the turn's other followers on this instance, on a
// pool of its own, and hands each what it read; a follower that already
// has every event that read saw waits without reading the log first. It
// returns ErrNotFound for a thread principal does not own, ErrTurnNotFound
// for a log that does not exist, and ErrUnavailable.
func (r *Redis) TurnEvents(ctx context.Context, threadID, principal, turnID string, after int, wait time.Duration) ([]TurnEvent, bool, error) {
	key := turnKey(threadID, turnID)
	if wait > 0 && r.follows.current(key, principal, after) {
		return r.waitTurnEvents(ctx, threadID, principal, turnID, after, wait)
	}
	status, data, err := r.run(ctx, "turn events", turnEventsCall{k: keysFor(threadID), logKey: key,
		principal: principal, after: after, turnID: turnID, eventsTTL: r.opts.TurnEventsTTL})
	if err != nil {
		return nil, false, err
	}
	switch status {
	case "OK":
	case "NOTFOUND":
		return nil, false, fmt.Errorf("store: thread %s: %w", threadID, ErrNotFound)
	case "NOTURN":
		return nil, false, fmt.Errorf("store: turn %s: %w", turnID, ErrTurnNotFound)
	default:
		return nil, false, unexpectedStatus("turn events", status)
	}
	var events []TurnEvent
	var ended bool
	if kind, _ := replyString(data[0]); kind == "string" {
		// Written whole when its turn ended: nothing follows.
		events, err = eventsFromReply(data[1:], after)
		ended = true
	} else {
		// A stream has ended when its last entry ends with the turn's
		// last event.
		var last []TurnEvent
		if last, err = eventsFromReply(data[1:2], 0); err != nil {
			return nil, false, err
		}
		ended = len(last) > 0 && last[len(last)-1].Last
		events, err = eventsFromReply(data[2:], after)
	}
	if err != nil || len(events) > 0 || ended || wait <= 0 {
		return events, ended, err
	}
	r.follows.checked(key, principal, after)
	return r.waitTurnEvents(ctx, threadID, principal, turnID, after, wait)
}

// waitTurnEvents waits, with the turn's other followers on this instance,
// for the log at key to hold events after after; when none come within
// wait (or the shared read failed) it reads the log, without waiting, to
// say why.
func (r *Redis) waitTurnEvents(ctx context.Context, threadID, principal, turnID string, after int, wait time.Duration) ([]TurnEvent, bool, error) {
	if events, ok := r.follows.wait(ctx, turnKey(threadID, turnID), after, wait); ok {
		return events, events[len(events)-1].Last, nil
	}
	if ctx.Err() != nil {
		return nil, false, nil
	}
	return r.TurnEvents(ctx, threadID, principal, turnID, after, 0)
}

// eventsFromReply reads the strings of records a log is read as, keeping
// the events after ID after: a batch may begin before it, and a batch
// re-sent after a lost reply may repeat what an earlier one holds.
func eventsFromReply(data []any, after int) ([]TurnEvent, error) {
	var out []TurnEvent
	for _, d := range data {
		s, _ := replyString(d)
		var err error
		if out, err = appendEventsAfter(out, s, &after); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendEventsAfter appends to out the events of records whose IDs pass
// *after, moving *after on to the last appended.
func appendEventsAfter(out []TurnEvent, records string, after *int) ([]TurnEvent, error) {
	events, err := parseLog(records)
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		if e.ID > *after {
			out = append(out, e)
			*after = e.ID
		}
	}
	return out, nil
}

// logBatch is a batch of a turn's events as the scripts take them (see
// add_events and close_log): the ID of its last event (0: none) and the
// events' records.
type logBatch struct {
	last    int
	records []byte
}

// newLogBatch is the batch of events, after start's record when the turn
// logged a first event (a log that ends holding only that one is written
// whole from the batch).
func newLogBatch(start TurnEvent, events []TurnEvent) logBatch {
	if len(events) == 0 {
		return logBatch{}
	}
	size := len(start.Name) + len(start.Data) + 24
	for _, e := range events {
		size += len(e.Name) + len(e.Data) + 24
	}
	records := make([]byte, 0, size)
	if start.Name != "" {
		records = appendRecord(records, start)
	}
	for _, e := range events {
		records = appendRecord(records, e)
	}
	return logBatch{last: events[len(events)-1].ID, records: records}
}

// appendRecord appends one event of a turn log: the header
// "<id> <name> <data length>\n", or "<id> <name> <data length> last\n" for
// the turn's last event, then the data.
func appendRecord(b []byte, e TurnEvent) []byte {
	b = strconv.AppendInt(b, int64(e.ID), 10)
	b = append(b, ' ')
	b = append(b, e.Name...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(e.Data)), 10)
	if e.Last {
		b = append(b, " "+lastFlag...)
	}
	b = append(b, '\n')
	return append(b, e.Data...)
}

// lastFlag ends the header of a turn's last event.
const lastFlag = "last"

// endedLog reports whether a record without the last flag, named name, is
// its turn's last event in a log written before records carried the flag:
// chatd then ended every log with an event of one of these names. No such
// log outlives the last instance that wrote one by more than a turn and
// TurnEventsTTL.
func endedLog(name string) bool { return name == "turn.completed" || name == "error" }

// parseLog reads a turn log kept as a string of records.
func parseLog(s string) ([]TurnEvent, error) {
	var out []TurnEvent
	for s != "" {
		header, rest, ok := strings.Cut(s, "\n")
		fields := strings.Fields(header)
		flagged := len(fields) == 4 && fields[3] == lastFlag
		if !ok || len(fields) != 3 && !flagged {
			return nil, fmt.Errorf("store: corrupt turn log record %q", header)
		}
		id, err1 := strconv.Atoi(fields[0])
		n, err2 := strconv.Atoi(fields[2])
		if err1 != nil || err2 != nil || n < 0 || n > len(rest) {
			return nil, fmt.Errorf("store: corrupt turn log record %q", header)
		}
		out = append(out, TurnEvent{ID: id, Name: fields[1], Data: []byte(rest[:n]), Last: flagged || endedLog(fields[1])})
		s = rest[n:]
	}
	return out, nil
}

// lockRecord is a begun turn's first event as a log record after its
// length, "<length>|<record>", as the lock keeps it (see open_log in the
// scripts); "0|" when the turn keeps no log.
func lockRecord(t TurnBegin) []byte {
	if t.ID == "" || t.Start.Name == "" {
		return []byte("0|")
	}
	record := appendRecord(nil, t.Start)
	b := strconv.AppendInt(make([]byte, 0, len(record)+12), int64(len(record)), 10)
	b = append(b, '|')
	return append(b, record...)
}
