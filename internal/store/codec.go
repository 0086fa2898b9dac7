package store

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"chatd/internal/blocks"
)

// Both implementations keep records in the same encoded form, so values read
// back (times, pending requests, messages) are identical whichever store
// holds them.

// withDefaults fills the zero fields of opts from DefaultOptions.
func withDefaults(opts Options) Options {
	if opts.ThreadTTL <= 0 {
		opts.ThreadTTL = DefaultOptions.ThreadTTL
	}
	if opts.HistoryMax <= 0 {
		opts.HistoryMax = DefaultOptions.HistoryMax
	}
	if opts.IdempotencyTTL <= 0 {
		opts.IdempotencyTTL = DefaultOptions.IdempotencyTTL
	}
	if opts.TurnEventsTTL <= 0 {
		opts.TurnEventsTTL = DefaultOptions.TurnEventsTTL
	}
	if opts.HistoryMaxBytes <= 0 {
		opts.HistoryMaxBytes = DefaultOptions.HistoryMaxBytes
	}
	if opts.MemoryMaxBytes <= 0 {
		opts.MemoryMaxBytes = DefaultOptions.MemoryMaxBytes
	}
	if opts.MaxThreads <= 0 {
		opts.MaxThreads = DefaultOptions.MaxThreads
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = DefaultOptions.WaitTimeout
	}
	if opts.FilesMaxBytes <= 0 {
		opts.FilesMaxBytes = DefaultOptions.FilesMaxBytes
	}
	return opts
}

// formatTime encodes a thread timestamp losslessly (nanoseconds, UTC).
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: corrupt timestamp %q: %w", s, err)
	}
	return t, nil
}

// normalizeThread fills in missing timestamps and puts them in the form they
// have after a round trip through the encoding.
func normalizeThread(t Thread, now time.Time) (Thread, error) {
	if t.ID == "" {
		return Thread{}, errors.New("store: thread id is empty")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = t.CreatedAt
	}
	var err error
	if t.CreatedAt, err = parseTime(formatTime(t.CreatedAt)); err != nil {
		return Thread{}, err
	}
	if t.UpdatedAt, err = parseTime(formatTime(t.UpdatedAt)); err != nil {
		return Thread{}, err
	}
	return t, nil
}

// pendingRecord is the stored form of a Pending. ExpiresAt is kept in Unix
// milliseconds because that is the resolution of Redis key expiry.
type pendingRecord struct {
	ID        string          `json:"id"`
	Request   json.RawMessage `json:"request,omitempty"`
	State     []byte          `json:"state,omitempty"`
	ExpiresAt int64           `json:"expires_at"`
}

func encodePending(p Pending) ([]byte, error) {
	if p.ElicitationID == "" {
		return nil, errors.New("store: pause without elicitation id")
	}
	b, err := json.Marshal(pendingRecord{
		ID:        p.ElicitationID,
		Request:   p.Request,
		State:     p.State,
		ExpiresAt: p.ExpiresAt.UnixMilli(),
	})
	if err != nil {
		return nil, fmt.Errorf("store: encode pending: %w", err)
	}
	return b, nil
}

func decodePending(b []byte) (*Pending, error) {
	var r pendingRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("store: corrupt pending record: %w", err)
	}
	return &Pending{
		ElicitationID: r.ID,
		Request:       r.Request,
		State:         r.State,
		ExpiresAt:     time.UnixMilli(r.ExpiresAt).UTC(),
	}, nil
}

// idempotencyRecord is the stored form of an Idempotency.
type idempotencyRecord struct {
	Principal   string `json:"principal"`
	Key         string `json:"key"`
	Fingerprint string `json:"fingerprint"`
	Result      []byte `json:"result,omitempty"`
}

func encodeIdempotency(rec Idempotency) ([]byte, error) {
	b, err := json.Marshal(idempotencyRecord(rec))
	if err != nil {
		return nil, fmt.Errorf("store: encode idempotency record: %w", err)
	}
	return b, nil
}

func decodeIdempotency(b []byte) (*Idempotency, error) {
	var r idempotencyRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("store: corrupt idempotency record: %w", err)
	}
	rec := Idempotency(r)
	return &rec, nil
}

// idempotencyField names an idempotency record within its thread. The
// principal is length-prefixed so that no (principal, key) pair can collide
// with another.
func idempotencyField(principal, key string) string {
	return strconv.Itoa(len(principal)) + ":" + principal + ":" + key
}

// encodedMessage is a message in its stored form: its ID and its JSON.
type encodedMessage struct {
	id   string
	data []byte
	// parent is the absolute position of the message's parent in Memory's
	// history, -1 for none; Redis keeps its own (see lua/lib/tree.lua).
	parent int
}

func encodeMessages(msgs []blocks.Message) ([]encodedMessage, error) {
	out := make([]encodedMessage, len(msgs))
	for i, m := range msgs {
		if m.ID == "" {
			return nil, fmt.Errorf("store: message %d has no id", i)
		}
		// MarshalJSON directly: through json.Marshal its output would be
		// checked and compacted again, which costs more than encoding it.
		b, err := m.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("store: encode message %s: %w", m.ID, err)
		}
		// Redis keeps records newline-separated and finds a record's ID
		// at its start (see lua/lib/history.lua); encoding/json guarantees
		// both for an ID it need not escape, which is every ID chatd mints.
		if !bytes.HasPrefix(b, []byte(`{"id":"`+m.ID+`"`)) || bytes.IndexByte(b, '\n') >= 0 {
			return nil, fmt.Errorf("store: message id %q cannot be stored as it is", m.ID)
		}
		out[i] = encodedMessage{id: m.ID, data: b}
	}
	return out, nil
}

func decodeMessage(b []byte) (blocks.Message, error) {
	var m blocks.Message
	if err := json.Unmarshal(b, &m); err != nil {
		return blocks.Message{}, fmt.Errorf("store: corrupt message: %w", err)
	}
	return m, nil
}

// newLockToken returns a fresh random token naming one holder of a thread's
// turn lock.
func newLockToken() (string, error) { return randomHex("lock token") }

// newCallID returns a fresh random ID naming one CreateThread or CommitTurn
// call. The script stores it with what it wrote, so a re-send of the same
// call (same ID) can tell that it already ran, while another call — even one
// with the same thread or lock token — cannot pass for it.
func newCallID() (string, error) { return randomHex("call id") }

func randomHex(what string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: %s: %w", what, err)
	}
	return hex.EncodeToString(b[:]), nil
}

func checkLockTTL(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("store: lock ttl must be positive, got %s", d)
	}
	return nil
}

func checkLimit(limit int) error {
	if limit <= 0 {
		return fmt.Errorf("store: history limit must be positive, got %d", limit)
	}
	return nil
}

// mergeMetadata applies a metadata patch (a nil value deletes its key) and
// checks the result against MaxMetadataKeys and MaxMetadataBytes, counted
// as its JSON encoding.
func mergeMetadata(current map[string]string, patch ThreadPatch) (map[string]string, error) {
	if len(patch.Metadata) == 0 && !patch.ClearMetadata {
		return current, nil
	}
	out := make(map[string]string, len(current)+len(patch.Metadata))
	if !patch.ClearMetadata {
		for k, v := range current {
			out[k] = v
		}
	}
	for k, v := range patch.Metadata {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxMetadataKeys || len(b) > MaxMetadataBytes {
		return nil, fmt.Errorf("store: %d keys, %d bytes: %w", len(out), len(b), ErrMetadataTooLarge)
	}
	return out, nil
}

// encodeMetadata is the stored form of a thread's metadata: its JSON, or ""
// for none.
func encodeMetadata(meta map[string]string) (string, error) {
	if len(meta) == 0 {
		return "", nil
	}
	b, err := json.Marshal(meta)
	return string(b), err
}

func decodeMetadata(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var meta map[string]string
	if err := json.Unmarshal([]byte(s), &meta); err != nil {
		return nil, fmt.Errorf("store: corrupt thread metadata: %w", err)
	}
	return meta, nil
}

// threadCursor is a position in a principal's thread list: most recently
// updated first, ties broken by descending ID.
type threadCursor struct {
	updated int64 // Unix milliseconds
	id      string
}

// before reports whether k is listed after c.
func (k threadCursor) before(c threadCursor) bool {
	return k.updated < c.updated || (k.updated == c.updated && k.id < c.id)
}

// String is the cursor as clients see it: opaque, URL-safe.
func (k threadCursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(k.updated, 10) + ":" + k.id))
}

func parseThreadCursor(s string) (threadCursor, error) {
	if s == "" {
		return threadCursor{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	ms, id, ok := strings.Cut(string(raw), ":")
	n, convErr := strconv.ParseInt(ms, 10, 64)
	if err != nil || !ok || convErr != nil || id == "" {
		return threadCursor{}, fmt.Errorf("store: thread cursor %q: %w", s, ErrUnknownCursor)
	}
	return threadCursor{updated: n, id: id}, nil
}

func sortThreadCursors(keys []threadCursor) {
	sort.Slice(keys, func(i, j int) bool { return keys[j].before(keys[i]) })
}
