package blocks

import (
	"encoding/json"
	"fmt"
	"strings"
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
// plain message serializes exactly as {id, role, message, timestamp}.
type Message struct {
	ID            string         `json:"id"`
	Role          Role           `json:"role"`
	Text          string         `json:"message"`
	Timestamp     time.Time      `json:"timestamp"`
	ContentBlocks []ContentBlock `json:"content_blocks,omitempty"`
	Meta          map[string]any `json:"_meta,omitempty"`
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

// NewID mints a UUIDv7, time-ordered. (History pages by commit position,
// not by comparing IDs, so skewed clocks between instances cannot reorder
// it.)
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// CanonicalID reports whether s is a UUID in canonical lowercase form, the
// only form chatd mints; anything else cannot name a thread, message, turn
// or elicitation.
func CanonicalID(s string) bool {
	if len(s) != 36 || strings.ToLower(s) != s {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
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
