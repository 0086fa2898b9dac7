package blocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Role says who authored a message.
type Role string

// The roles a chat message can have.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one persisted chat message, the same record in live responses
// and in history. Text is authoritative for block-unaware consumers;
// ContentBlocks and Meta enrich it and are omitted from JSON when empty, so a
// plain message serializes exactly as {id, parent_id, role, message,
// timestamp}. ParentID is the message it follows in its branch of the
// thread's history, empty (null on the wire) for a thread's first.
//
// Meta values decoded from JSON hold numbers as json.Number, written back
// digit for digit (1e400, 9007199254740993, -0 and 1.0 stay as they were),
// and the timestamp is written with exactly three fractional digits
// (FormatTimestamp).
type Message struct {
	ID            string         `json:"id"`
	ParentID      string         `json:"parent_id"`
	Role          Role           `json:"role"`
	Text          string         `json:"message"`
	Timestamp     time.Time      `json:"timestamp"`
	ContentBlocks []ContentBlock `json:"content_blocks,omitempty"`
	Meta          map[string]any `json:"_meta,omitempty"`
}

// messageJSON is a Message on the wire.
type messageJSON struct {
	ID            string          `json:"id"`
	ParentID      *string         `json:"parent_id"`
	Role          Role            `json:"role"`
	Text          string          `json:"message"`
	Timestamp     string          `json:"timestamp"`
	ContentBlocks []ContentBlock  `json:"content_blocks,omitempty"`
	Meta          json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON writes the message as its wire record.
func (m Message) MarshalJSON() ([]byte, error) {
	w := messageJSON{ID: m.ID, Role: m.Role, Text: m.Text, Timestamp: FormatTimestamp(m.Timestamp), ContentBlocks: m.ContentBlocks}
	if m.ParentID != "" {
		w.ParentID = &m.ParentID
	}
	if len(m.Meta) > 0 {
		meta, err := appendObject(nil, m.Meta, "")
		if err != nil {
			return nil, fmt.Errorf("message _meta: %w", err)
		}
		w.Meta = meta
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a wire record. Numbers in _meta become json.Number,
// not float64: a float64 would round 9007199254740993 and cannot hold 1e400
// at all.
func (m *Message) UnmarshalJSON(data []byte) error {
	var w messageJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	ts, err := time.Parse(time.RFC3339Nano, w.Timestamp)
	if err != nil {
		return fmt.Errorf("message timestamp: %w", err)
	}
	var meta map[string]any
	if len(w.Meta) > 0 && string(w.Meta) != "null" {
		v, err := parseJSON(w.Meta)
		if err != nil {
			return fmt.Errorf("message _meta: %w", err)
		}
		var ok bool
		if meta, ok = v.(map[string]any); !ok {
			return errors.New("message _meta: must be an object, not " + KindOf(v))
		}
	}
	*m = Message{ID: w.ID, Role: w.Role, Text: w.Text, Timestamp: ts.UTC(), ContentBlocks: w.ContentBlocks, Meta: meta}
	if w.ParentID != nil {
		m.ParentID = *w.ParentID
	}
	return nil
}

// NewMessage returns a message with a fresh time-ordered ID and the current
// time (see Now).
func NewMessage(role Role, text string, contentBlocks []ContentBlock, meta map[string]any) Message {
	return Message{
		ID:            NewID(),
		Role:          role,
		Text:          text,
		Timestamp:     Now(),
		ContentBlocks: contentBlocks,
		Meta:          meta,
	}
}

// Now is the current time as messages record it: UTC, to the millisecond,
// the precision every timestamp chatd serves has.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// timestampLayout is RFC 3339 with exactly three fractional digits. A fixed
// width keeps the string order of timestamps their time order, which
// time.RFC3339Nano (trailing zeros dropped: .5Z sorts after .123Z) does not.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTimestamp formats t as every timestamp chatd serves is written: RFC
// 3339 in UTC with exactly three fractional digits, 2026-11-30T14:56:58.500Z.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

// Timestamp is a time that encodes to JSON as FormatTimestamp writes it, for
// the timestamps of envelopes (threads, turn results, problems).
type Timestamp time.Time

// MarshalJSON writes the time with exactly three fractional digits.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + FormatTimestamp(time.Time(t)) + `"`), nil
}

// UnmarshalJSON reads any RFC 3339 time.
func (t *Timestamp) UnmarshalJSON(data []byte) error {
	var tt time.Time
	if err := tt.UnmarshalJSON(data); err != nil {
		return err
	}
	*t = Timestamp(tt.UTC())
	return nil
}

// Stamp returns t as a *Timestamp, for optional timestamps.
func Stamp(t time.Time) *Timestamp {
	ts := Timestamp(t)
	return &ts
}

// NewID mints a UUIDv7, time-ordered, for threads and messages. History
// does not page by ID order (IDs minted on several instances interleave
// with their clocks) but by commit position; the time order only makes IDs
// read naturally and index well.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// IsCanonicalID reports whether s is a UUID in canonical form (lowercase,
// hyphenated), the only form chatd mints its IDs in, elicitation IDs
// included. Anything else cannot name a thread, message or elicitation.
func IsCanonicalID(s string) bool {
	if len(s) != 36 {
		return false
	}
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// Blocks returns the message's content blocks (nil when it has none).
func (m Message) Blocks() []ContentBlock { return m.ContentBlocks }

// MetaValue returns the value of one _meta key and whether it is present.
func (m Message) MetaValue(key string) (any, bool) {
	v, ok := m.Meta[key]
	return v, ok
}

// EncodedMessages are messages in their stored JSON form, oldest first. The
// store hands a turn's history window over encoded: decoding is most of a
// turn's own cost, and many processors never read the window. Decode it when
// it is needed; the bytes are shared and must not be modified.
type EncodedMessages [][]byte

// Decode returns the messages.
func (e EncodedMessages) Decode() ([]Message, error) {
	out := make([]Message, len(e))
	for i, data := range e {
		if err := json.Unmarshal(data, &out[i]); err != nil {
			return nil, fmt.Errorf("message %d of %d: %w", i+1, len(e), err)
		}
	}
	return out, nil
}
