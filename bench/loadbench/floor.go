package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"chatd/internal/blocks"
)

// floor is the least a Redis-backed turn endpoint can do: decode the same
// request body, write the turn as one MULTI/EXEC pipeline touching the same
// keys with about as many commands as chatd's commit, and answer a JSON body
// of the same shape. It has no lock, no history read, no processor, no
// metrics and no logging: chatd's turn is measured against it.
type floor struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

func (f *floor) routes() http.Handler {
	r := chi.NewRouter()
	r.Post("/v1/threads/{thread_id}/turns", f.turn)
	return r
}

type floorRequest struct {
	Message       *string         `json:"message"`
	ContentBlocks json.RawMessage `json:"content_blocks"`
	Meta          map[string]any  `json:"_meta"`
}

type floorResult struct {
	ThreadID           string          `json:"thread_id"`
	Status             string          `json:"status"`
	UserMessage        blocks.Message  `json:"user_message"`
	Message            blocks.Message  `json:"message"`
	StructuredResponse floorStructured `json:"structured_response"`
	Elicitation        json.RawMessage `json:"elicitation"`
	ExpiresAt          *time.Time      `json:"elicitation_expires_at"`
}

type floorStructured struct {
	ContentBlocks []blocks.ContentBlock `json:"content_blocks"`
	Meta          map[string]any        `json:"_meta"`
}

func (f *floor) turn(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "thread_id")
	if r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "content type", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "body", http.StatusBadRequest)
		return
	}
	var req floorRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil || req.Message == nil {
		http.Error(w, "request", http.StatusBadRequest)
		return
	}
	user := blocks.NewMessage(blocks.RoleUser, *req.Message, nil, req.Meta)
	assistant := blocks.NewMessage(blocks.RoleAssistant, *req.Message, nil, nil)
	if err := f.commit(r, id, user, assistant); err != nil {
		http.Error(w, "store", http.StatusServiceUnavailable)
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(floorResult{
		ThreadID: id, Status: "completed", UserMessage: user, Message: assistant,
		StructuredResponse: floorStructured{ContentBlocks: []blocks.ContentBlock{}, Meta: map[string]any{}},
		Elicitation:        json.RawMessage("null"),
	}); err != nil {
		http.Error(w, "encode", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// commit writes the two messages the way chatd's commit script does, as one
// transaction: bump the sequence, add both IDs to the ordered set and their
// JSON to the data hash, count the history (the trim check), set updated_at,
// and refresh the TTL of the six keys a commit refreshes.
func (f *floor) commit(r *http.Request, threadID string, msgs ...blocks.Message) error {
	p := "floor:{" + threadID + "}:"
	thread, ids, data := p+"thread", p+"msgs", p+"msgdata"
	members := make([]redis.Z, 0, len(msgs))
	fields := make([]any, 0, 2*len(msgs))
	base := float64(time.Now().UnixMicro())
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		members = append(members, redis.Z{Score: base + float64(i), Member: m.ID})
		fields = append(fields, m.ID, b)
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	cmds, err := f.rdb.TxPipelined(r.Context(), func(pipe redis.Pipeliner) error {
		pipe.HIncrBy(r.Context(), thread, "seq", int64(len(msgs)))
		pipe.ZAddNX(r.Context(), ids, members...)
		pipe.HSet(r.Context(), data, fields...)
		pipe.ZCard(r.Context(), ids)
		pipe.HSet(r.Context(), thread, "updated", now)
		for _, k := range []string{thread, ids, data, p + "elicitations", p + "idem", p + "idemexp"} {
			pipe.PExpire(r.Context(), k, f.ttl)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if c.Err() != nil && !errors.Is(c.Err(), redis.Nil) {
			return c.Err()
		}
	}
	return nil
}
