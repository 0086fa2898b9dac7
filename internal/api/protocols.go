package api

import (
	"errors"
	"fmt"
	"net/http"

	"chatd/internal/blocks"
	"chatd/internal/protocol"
	"chatd/internal/protocol/agui"
	"chatd/internal/protocol/aisdk"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// The frontend protocols are consumers of the turn engine's events like the
// JSON and SSE answers: these handlers read a protocol's request into a
// turn, begin it under the same auth, tenancy, idempotency and limits as the
// native endpoints, and hand its events to the protocol's writer
// (internal/protocol/aisdk and agui), which knows nothing of HTTP.

// turnSink is what a protocol's writer takes of a turn.
type turnSink interface {
	Start(turn.Start)
	Delta(text string, meta map[string]any)
	Completed(*turn.Result)
	Failed(Problem)
}

// uiSink writes a turn as a Vercel AI SDK UI message stream.
type uiSink struct{ *aisdk.Stream }

// Failed shows the problem as the error part's text: its detail, its code
// for programs to match, then any field errors.
func (u uiSink) Failed(p Problem) {
	text := fmt.Sprintf("%s (%s)", p.Detail, p.Code)
	for i, fe := range p.Errors {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		text += sep + fe.Field + ": " + fe.Detail
	}
	u.Error(text)
}

// runSink writes a turn as an AG-UI run.
type runSink struct{ *agui.Run }

func (a runSink) Failed(p Problem) { a.Error(p.Code, p.Detail, p.Errors) }

// handleAISDKChat runs a turn for the Vercel AI SDK: POST /v1/ai-sdk/chat.
// Input that cannot be read is a problem+json answer; anything that stops
// the turn after that — no such thread, an expired or invalid answer, a
// failed processor — ends the stream with an error part, which useChat
// shows as the chat's error.
func (s *Server) handleAISDKChat(w http.ResponseWriter, r *http.Request) error {
	idemKey, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, false)
	if err != nil {
		return err
	}
	req, err := aisdk.DecodeRequest(body)
	if err != nil {
		return protocolError(err)
	}
	if err := s.checkAttachments(req.Blocks); err != nil {
		return err
	}
	if err := s.storeUploads(r.Context(), req.ThreadID, req.Blocks, req.Uploads); err != nil {
		return err
	}
	var t *turn.Turn
	continues := ""
	switch {
	case req.Answer != nil:
		continues = req.Answer.MessageID
		t, err = s.beginAnswer(r, req.ThreadID, req.Answer, req.StopOnDisconnect)
	case req.Regenerate:
		t, err = s.beginProtocolRegenerate(r, req.ThreadID, req.RegenerateID, idemKey, body, req.StopOnDisconnect)
	default:
		// A new message while a question is pending steers away from it,
		// as a chat user expects: useChat has no other way to say so. A
		// message with the ID of a user message in history edits it.
		t, err = s.beginProtocolTurn(r, req.ThreadID, req.Text, req.Blocks, idemKey, body,
			protocolTurn{stopOnDisconnect: req.StopOnDisconnect, cancelPending: true,
				parent: s.editedParent(r, req.ThreadID, req.UserMessageID)})
	}
	stream := s.startUIStream(w, true)
	defer stream.close()
	sink := uiSink{aisdk.NewStream(stream.sendData, continues)}
	if err != nil {
		s.failProtocol(r, sink, err)
		return nil
	}
	s.writeProtocol(r, sink, t.Events(r.Context(), -1))
	return nil
}

// handleAISDKStream reattaches useChat to the thread's running turn:
// GET /v1/ai-sdk/chat/{thread_id}/stream. The stream replays the turn from
// its first event (the transport treats a resumed stream as a replay); 204
// when no turn is running.
func (s *Server) handleAISDKStream(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	principal := principalFrom(r.Context())
	thread, _, err := s.store.GetThread(r.Context(), id, principal)
	if err != nil {
		return err
	}
	if thread.Running == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	var stream *sseStream
	var sink uiSink
	ref := turn.Ref{ThreadID: id, Principal: principal, TurnID: thread.Running.ID}
	for ev, err := range s.engine.Events(r.Context(), ref, 0) {
		if err != nil {
			if stream != nil {
				break // the client left
			}
			if errors.Is(err, store.ErrTurnNotFound) {
				break // the turn ended, and its log with it, since the thread was read
			}
			return err
		}
		if stream == nil {
			stream = s.startUIStream(w, true)
			defer stream.close()
			sink = uiSink{aisdk.NewStream(stream.sendData, "")}
		}
		s.feedProtocol(r, sink, ev)
	}
	if stream == nil {
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}

// handleAGUI runs a turn for an AG-UI client: POST /v1/ag-ui. Input that
// cannot be read is a problem+json answer; anything that stops the turn
// after that — no such thread, a pending elicitation, an expired answer, a
// failed processor — is the run's RUN_ERROR with chatd's problem code.
func (s *Server) handleAGUI(w http.ResponseWriter, r *http.Request) error {
	idemKey, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, false)
	if err != nil {
		return err
	}
	req, err := agui.DecodeRequest(body)
	if err != nil {
		return protocolError(err)
	}
	if err := s.checkAttachments(req.Blocks); err != nil {
		return err
	}
	if err := s.storeUploads(r.Context(), req.ThreadID, req.Blocks, req.Uploads); err != nil {
		return err
	}
	var t *turn.Turn
	if req.Answer != nil {
		t, err = s.beginAnswer(r, req.ThreadID, req.Answer, req.StopOnDisconnect)
	} else {
		t, err = s.beginProtocolTurn(r, req.ThreadID, req.Text, req.Blocks, idemKey, body,
			protocolTurn{stopOnDisconnect: req.StopOnDisconnect})
	}
	stream := s.startUIStream(w, false)
	defer stream.close()
	sink := runSink{agui.NewRun(stream.sendData, req.ThreadID, req.RunID)}
	if err != nil {
		s.failProtocol(r, sink, err)
		return nil
	}
	sink.Started()
	s.writeProtocol(r, sink, t.Events(r.Context(), -1))
	return nil
}

// protocolTurn is what a protocol's request asks of its turn beyond the
// message.
type protocolTurn struct {
	stopOnDisconnect bool
	cancelPending    bool
	// parent is the parent_id of the user's message (nil: the head).
	parent *string
}

// beginProtocolTurn begins a plain turn on a protocol's user message, with
// the native turn's idempotency (keyed on the whole body).
func (s *Server) beginProtocolTurn(r *http.Request, threadID, text string, list []blocks.ContentBlock, idemKey string, body []byte, opts protocolTurn) (*turn.Turn, error) {
	if !blocks.IsCanonicalID(threadID) {
		return nil, store.ErrNotFound
	}
	if err := s.checkFileLinks(r.Context(), threadID, principalFrom(r.Context()), list, "messages"); err != nil {
		return nil, err
	}
	return s.engine.Begin(r.Context(), turn.Plain{
		ThreadID: threadID, Principal: principalFrom(r.Context()), Message: blocks.NewMessage(blocks.RoleUser, text, list, nil),
		IdempotencyKey: idemKey, Fingerprint: fingerprintOf(body), Stream: true,
		StopOnDisconnect: opts.stopOnDisconnect, CancelPending: opts.cancelPending, Parent: opts.parent,
	})
}

// beginAnswer begins the turn that answers an elicitation.
func (s *Server) beginAnswer(r *http.Request, threadID string, a *protocol.Answer, stopOnDisconnect bool) (*turn.Turn, error) {
	if !blocks.IsCanonicalID(threadID) {
		return nil, store.ErrNotFound
	}
	if err := validateClientMeta(a.Meta); err != nil {
		return nil, err
	}
	return s.engine.BeginAnswer(r.Context(), turn.Answer{
		ThreadID: threadID, Principal: principalFrom(r.Context()), ElicitationID: a.ElicitationID,
		Result: a.Result, Meta: a.Meta, Stream: true, StopOnDisconnect: stopOnDisconnect,
	})
}

// writeProtocol writes a turn's events through a protocol's writer.
func (s *Server) writeProtocol(r *http.Request, sink turnSink, events turnEvents) {
	for ev, err := range events {
		if err != nil {
			s.failProtocol(r, sink, err)
			return
		}
		s.feedProtocol(r, sink, ev)
	}
}

// feedProtocol hands a protocol's writer one event of a turn.
func (s *Server) feedProtocol(r *http.Request, sink turnSink, ev turn.Event) {
	switch ev.Kind {
	case turn.EventStart:
		sink.Start(ev.Start)
	case turn.EventDelta:
		sink.Delta(ev.Delta.Text, ev.Delta.Meta)
	case turn.EventCompleted:
		sink.Completed(ev.Result)
	case turn.EventError:
		s.observeFailure(r, ev.Failure)
		sink.Failed(problemFor(ev.Failure))
	}
}

// failProtocol ends a protocol's stream with err, which stopped the turn
// before it began: no such thread, a pending elicitation, an expired answer.
func (s *Server) failProtocol(r *http.Request, sink turnSink, err error) {
	if isClientGone(r, err) {
		return
	}
	p := problemFor(err)
	s.observeError(r, p, err)
	sink.Failed(p)
}

// startUIStream opens a frontend protocol's event stream; uiMessages marks
// it as an AI SDK UI message stream.
func (s *Server) startUIStream(w http.ResponseWriter, uiMessages bool) *sseStream {
	if uiMessages {
		w.Header().Set(aisdk.Header, aisdk.HeaderValue)
	}
	return s.startStream(w)
}

// checkAttachments holds a protocol message to the native turn's limit on
// content blocks.
func (s *Server) checkAttachments(list []blocks.ContentBlock) error {
	if len(list) > s.cfg.MaxBlocks {
		verr := &blocks.ValidationError{}
		verr.Add("messages", fmt.Sprintf("%d attachments; at most %d are allowed per message", len(list), s.cfg.MaxBlocks))
		return verr
	}
	return nil
}

// protocolError maps a protocol decoder's errors: unreadable input is 400,
// invalid attachments keep their 422 with paths.
func protocolError(err error) error {
	var ierr *protocol.InputError
	if errors.As(err, &ierr) {
		return errorf(http.StatusBadRequest, "invalid_request", "%s", ierr.Detail)
	}
	return err
}
