package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"unicode/utf8"

	"chatd/internal/blocks"
	"chatd/internal/store"
)

// FuzzParseTurnRequest feeds arbitrary bodies to the turn decoder: it must
// never panic, must refuse with a client error (400 or 422) rather than
// anything else, and what it accepts must encode as a valid message.
func FuzzParseTurnRequest(f *testing.F) {
	for _, seed := range []string{
		`{"message":"hi"}`,
		`{"message":"","content_blocks":[{"type":"text","text":""}]}`,
		`{"message":"x","content_blocks":[{"type":"image","data":"aGk=","mimeType":"image/png","annotations":{"priority":0}}],"_meta":{"acme.com/x":1}}`,
		`{"message":"x","content_blocks":"nope"}`,
		`{"message":"x","_meta":{"bad key":1}}`,
		`{"message":1}`,
		`{"message":"x"} trailing`,
		`{"message":"x","extra":true}`,
		`[]`,
		`null`,
		`{"message":"x","content_blocks":[{"type":"resource","resource":{"uri":"u","text":"t","blob":"aGk="}}]}`,
		`{"message":"x","content_blocks":[{},{},{},{},{},{},{},{},{}]}`,
		`{"message":"x","parent_id":null}`,
		`{"message":"x","parent_id":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a10"}`,
		`{"message":"x","parent_id":7}`,
		`{"message":"x","parent_id":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := parseTurnRequest(body, 8)
		msg := in.message
		if err != nil {
			p := problemFor(err)
			if p.Status != http.StatusBadRequest && p.Status != http.StatusUnprocessableEntity {
				t.Fatalf("body %q: status %d (%s), want 400 or 422", body, p.Status, err)
			}
			var verr *blocks.ValidationError
			if p.Status == http.StatusUnprocessableEntity && (!errors.As(err, &verr) || len(p.Errors) == 0) {
				t.Fatalf("body %q: 422 without field errors", body)
			}
			return
		}
		if msg.Text == "" && len(msg.ContentBlocks) == 0 {
			t.Fatalf("body %q: accepted an empty message", body)
		}
		encoded, err := json.Marshal(msg)
		if err != nil {
			t.Fatalf("body %q: accepted message does not encode: %v", body, err)
		}
		var back blocks.Message
		if err := json.Unmarshal(encoded, &back); err != nil {
			t.Fatalf("body %q: accepted message does not decode again: %v", body, err)
		}
	})
}

// FuzzThreadPatch feeds arbitrary PATCH bodies to the thread patch decoder:
// it must never panic, must refuse with 400 or 422, and what it accepts must
// be within a patch's bounds.
func FuzzThreadPatch(f *testing.F) {
	for _, seed := range []string{
		`{"title":"Plans"}`,
		`{"title":null,"metadata":null}`,
		`{"metadata":{"a":"1","b":null}}`,
		`{"title":""}`,
		`{"title":5}`,
		`{"metadata":["a"]}`,
		`{"metadata":{"":"x"}}`,
		`{"processor":"demo"}`,
		`{}`,
		`null`,
		`{"title":"x"} {}`,
		`{"head_id":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a10"}`,
		`{"head_id":null}`,
		`{"head_id":"x","title":"y"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req threadPatch
		err := decodeStrict(body, &req, patchShape)
		if err == nil {
			var patch store.ThreadPatch
			patch, err = parseThreadPatch(req)
			if err == nil {
				patch.Head, err = parseHeadID(req.HeadID)
			}
			if err == nil {
				if patch.Head != "" && !blocks.IsCanonicalID(patch.Head) {
					t.Fatalf("body %q: accepted head_id %q", body, patch.Head)
				}
				if patch.Title != nil && (*patch.Title == "" || utf8.RuneCountInString(*patch.Title) > maxTitleRunes) {
					t.Fatalf("body %q: accepted title %q", body, *patch.Title)
				}
				for k := range patch.Metadata {
					if k == "" || len(k) > 64 {
						t.Fatalf("body %q: accepted metadata key %q", body, k)
					}
				}
				return
			}
		}
		if p := problemFor(err); p.Status != http.StatusBadRequest && p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("body %q: status %d (%s), want 400 or 422", body, p.Status, err)
		}
	})
}
