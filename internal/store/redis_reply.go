package store

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"chatd/internal/blocks"
)

func splitReply(op string, cmd *redis.Cmd) (string, []any, error) {
	reply, err := cmd.Slice()
	if err != nil {
		return "", nil, wrapRedisError(op, err)
	}
	if len(reply) == 0 {
		return "", nil, fmt.Errorf("store: %s: empty script reply", op)
	}
	status, _ := reply[0].(string)
	return status, reply[1:], nil
}

func unexpectedStatus(op, status string) error {
	return fmt.Errorf("store: %s: unexpected script status %q", op, status)
}

func replyString(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok
}

// threadFields is how many reply elements a thread takes (thread_reply).
const threadFields = 9

// threadFromReply decodes a thread as thread_reply returns it: owner,
// processor, created, updated, title, metadata, preview (the last three
// nil when absent), then the running turn's ID and start (nil when none).
func threadFromReply(id string, data []any) (Thread, error) {
	if len(data) < threadFields {
		return Thread{}, fmt.Errorf("store: thread %s: short reply", id)
	}
	var f [threadFields]string
	for i := range f {
		s, ok := replyString(data[i])
		if !ok && i < 4 {
			return Thread{}, fmt.Errorf("store: thread %s: corrupt record", id)
		}
		f[i] = s
	}
	created, err := parseTime(f[2])
	if err != nil {
		return Thread{}, err
	}
	updated, err := parseTime(f[3])
	if err != nil {
		return Thread{}, err
	}
	t := Thread{ID: id, Owner: f[0], Processor: f[1], CreatedAt: created, UpdatedAt: updated, Preview: f[6]}
	if title, ok := replyString(data[4]); ok {
		t.Title = &title
	}
	if t.Metadata, err = decodeMetadata(f[5]); err != nil {
		return Thread{}, err
	}
	if f[7] != "" {
		ms, err := strconv.ParseInt(f[8], 10, 64)
		if err != nil {
			return Thread{}, fmt.Errorf("store: thread %s: corrupt lock", id)
		}
		t.Running = &RunningTurn{ID: f[7], StartedAt: time.UnixMilli(ms).UTC()}
	}
	return t, nil
}

func messagesFromReply(data []any) ([]blocks.Message, error) {
	recs, err := splitRecords(data)
	if err != nil {
		return nil, err
	}
	out := make([]blocks.Message, 0, len(recs))
	for _, r := range recs {
		m, err := decodeMessage(r)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// encodedFromReply collects message JSON from a script reply, undecoded.
func encodedFromReply(data []any) (blocks.EncodedMessages, error) {
	recs, err := splitRecords(data)
	if err != nil {
		return nil, err
	}
	return blocks.EncodedMessages(recs), nil
}

func pendingFromReply(v any) (*Pending, error) {
	s, ok := replyString(v)
	if !ok {
		return nil, nil
	}
	return decodePending([]byte(s))
}

// splitRecords splits script reply strings, each one or more
// newline-separated message JSON records (see lua/lib/history.lua), into the records.
func splitRecords(data []any) ([][]byte, error) {
	out := make([][]byte, 0, len(data))
	for _, v := range data {
		s, ok := replyString(v)
		if !ok {
			return nil, errors.New("store: corrupt history reply")
		}
		for rec := range bytes.SplitSeq([]byte(s), []byte{'\n'}) {
			if len(rec) > 0 {
				out = append(out, rec)
			}
		}
	}
	return out, nil
}
