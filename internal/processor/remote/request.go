package remote

import (
	"errors"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
)

// request is the body of a turn's POST, "request" in
// docs/remote-processor.schema.json:
//
//	{thread_id, turn_id, processor, principal, message, history, resume}
//
// It is written by hand rather than through encoding/json because history
// arrives already encoded: its messages are copied as they are, not decoded
// and encoded again, nor rescanned as json.RawMessage would be.
type request struct {
	threadID, turnID, processor, principal string
	message                                blocks.Message
	history                                blocks.EncodedMessages
	resume                                 *processor.Resume
}

func (p *Processor) encodeRequest(in processor.Input) ([]byte, error) {
	r := request{threadID: in.ThreadID, turnID: in.TurnID, processor: p.cfg.Name, principal: in.Principal,
		history: in.History, resume: in.Resume}
	switch {
	case in.Resume != nil:
		r.message = in.Resume.Message
	case in.Message != nil:
		r.message = *in.Message
	default:
		return nil, errors.New("a turn with neither a message nor a resume")
	}
	return r.encode()
}

func (r request) encode() ([]byte, error) {
	size := 256 + len(r.message.Text)
	for _, m := range r.history {
		size += len(m) + 1
	}
	if r.resume != nil {
		size += len(r.resume.State) + 256
	}
	buf := appendField(make([]byte, 0, size), `{"thread_id":`, r.threadID)
	buf = appendField(buf, `,"turn_id":`, r.turnID)
	buf = appendField(buf, `,"processor":`, r.processor)
	buf = appendField(buf, `,"principal":`, r.principal)
	// MarshalJSON's output is the message's compact JSON already; through
	// blocks.Marshal it would only be scanned again.
	message, err := r.message.MarshalJSON()
	if err != nil {
		return nil, err
	}
	buf = append(append(buf, `,"message":`...), message...)
	buf = append(buf, `,"history":[`...)
	for i, m := range r.history {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, m...)
	}
	buf = append(buf, `],"resume":`...)
	if r.resume == nil {
		return append(buf, `null}`...), nil
	}
	if buf, err = appendResume(buf, r.resume); err != nil {
		return nil, err
	}
	return append(buf, '}'), nil
}

func appendField(buf []byte, key, value string) []byte {
	return blocks.AppendString(append(buf, key...), value)
}

// resumeResult is the user's answer as the processor reads it: the MCP
// ElicitResult and the _meta the client sent with it.
type resumeResult struct {
	Action  elicit.Action  `json:"action"`
	Content map[string]any `json:"content,omitempty"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// appendResume appends {elicitation_id, state, result}. The state is the
// JSON the processor paused with, stored as it was checked then.
func appendResume(buf []byte, res *processor.Resume) ([]byte, error) {
	if res.Request == nil {
		return nil, errors.New("a resume without its elicitation request")
	}
	result, err := blocks.Marshal(resumeResult{Action: res.Result.Action, Content: res.Result.Content, Meta: answerMeta(res.Message.Meta)})
	if err != nil {
		return nil, err
	}
	buf = appendField(buf, `{"elicitation_id":`, res.Request.ID)
	buf = append(buf, `,"state":`...)
	if len(res.State) == 0 {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, res.State...)
	}
	buf = append(append(buf, `,"result":`...), result...)
	return append(buf, '}'), nil
}

// answerMeta is the client's own _meta of an answer: the recorded answer
// message's _meta without chatd's record of the result, which the request
// already carries as result.
func answerMeta(recorded map[string]any) map[string]any {
	if len(recorded) <= 1 {
		if _, only := recorded[blocks.MetaElicitationResult]; only || len(recorded) == 0 {
			return nil
		}
	}
	out := make(map[string]any, len(recorded))
	for k, v := range recorded {
		if k != blocks.MetaElicitationResult {
			out[k] = v
		}
	}
	return out
}
