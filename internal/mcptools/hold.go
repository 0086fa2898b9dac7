package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"chatd/internal/elicit"
	"chatd/internal/processor/agent"
)

// A 2025-era call held open for the user's answer lives on one instance;
// the answer may arrive on any. The instance that receives it publishes a
// relayMsg on the holder's channel and listens on a reply channel of its
// own for the holder's replyMsgs: an ack at once, then the outcome.

func instanceChannel(id string) string { return "chatd:mcp:instance:" + id }

// relayMsg is an answer for a held call.
type relayMsg struct {
	Hold   string        `json:"hold"`
	Reply  string        `json:"reply"`
	Result elicit.Result `json:"result"`
}

// replyMsg is the holder's reply.
type replyMsg struct {
	Kind   string          `json:"kind"`             // ack, result, ask, gone, error
	Result json.RawMessage `json:"result,omitempty"` // kind result: the raw CallToolResult
	Ask    json.RawMessage `json:"ask,omitempty"`    // kind ask: the next question's params
	State  json.RawMessage `json:"state,omitempty"`  // kind ask: the tool state to pause with
	Error  string          `json:"error,omitempty"`  // kind gone, error
	// Progress is kind progress: an agent.ToolStatus of the call, which
	// goes on after the answer on the holding instance.
	Progress json.RawMessage `json:"progress,omitempty"`
}

// hold keeps a call that asked the user open on this instance and pauses the
// turn with the question.
func (m *Manager) hold(ctx context.Context, c *call, a *ask) (agent.ToolResult, error) {
	state, err := m.holdState(ctx, c, a)
	if err != nil {
		return agent.ToolResult{}, err
	}
	return agent.ToolResult{Pause: &agent.ToolPause{Request: a.request, State: state}}, nil
}

func (m *Manager) holdState(ctx context.Context, c *call, a *ask) (json.RawMessage, error) {
	if err := m.listen(ctx); err != nil {
		// No answer could reach this instance: better not to ask.
		a.answer <- &mcp.ElicitResult{Action: string(elicit.Cancel)}
		go c.drain()
		return nil, fmt.Errorf("%w: chatd cannot receive the answer to the server's question: %v", errNotCompleted, err)
	}
	id := uuid.NewString()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		a.answer <- &mcp.ElicitResult{Action: string(elicit.Cancel)}
		go c.drain()
		return nil, fmt.Errorf("%w: chatd is shutting down", errNotCompleted)
	}
	if n := m.heldLocked(c.s, c.principal); n >= m.opts.MaxHeldPerPrincipal {
		m.mu.Unlock()
		a.answer <- &mcp.ElicitResult{Action: string(elicit.Cancel)}
		go c.drain()
		return nil, fmt.Errorf("%w: %d of your questions from this server already wait for an answer; answer one of them first",
			errNotCompleted, n)
	}
	c.hold, c.ask = id, a
	c.timer = time.AfterFunc(m.opts.HoldTTL, func() { m.expire(id) })
	m.holds[id] = c
	m.mu.Unlock()
	return json.Marshal(toolState{Kind: kindHeld, Instance: m.instance, Hold: id})
}

// heldLocked counts the calls of server s that principal's questions hold;
// the caller holds m.mu. Holds are few (at most MaxSessions per server).
func (m *Manager) heldLocked(s *Server, principal string) int {
	n := 0
	for _, c := range m.holds {
		if c.s == s && c.principal == principal {
			n++
		}
	}
	return n
}

// take removes a hold and returns its call, or nil.
func (m *Manager) take(id string) *call {
	m.mu.Lock()
	c := m.holds[id]
	delete(m.holds, id)
	m.mu.Unlock()
	if c != nil {
		c.timer.Stop()
	}
	return c
}

// complete answers the held URL-mode question the server says is complete
// (notifications/elicitation/complete): the user finished on the page, so
// the call goes on without waiting for their answer, which then finds its
// outcome.
func (m *Manager) complete(cs *mcp.ClientSession, elicitationID string) {
	if elicitationID == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.holds {
		if a := c.ask; a != nil && c.x.cs == cs && a.request.IsURL() && a.request.ElicitationID == elicitationID {
			a.answer <- &mcp.ElicitResult{Action: string(elicit.Accept)}
			c.ask = nil
			if m.settle != nil && c.thread != "" {
				go m.answerForUser(m.settle, Settled{ThreadID: c.thread, Principal: c.principal, ElicitationID: a.request.ID})
			}
		}
	}
}

// Settled is a paused turn's URL-mode question that its MCP server said is
// complete: the user finished on the page.
type Settled struct {
	ThreadID, Principal string
	// ElicitationID is chatd's ID of the question.
	ElicitationID string
}

// OnSettled makes the manager answer a held URL-mode question accept, on
// the user's behalf, with settle when the server says it is complete, so
// the turn resumes without waiting for the user. settle's error (the user
// answered first, the question expired) is logged.
func (m *Manager) OnSettled(settle func(context.Context, Settled) error) {
	m.mu.Lock()
	m.settle = settle
	m.mu.Unlock()
}

func (m *Manager) answerForUser(settle func(context.Context, Settled) error, q Settled) {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.HoldTTL)
	defer cancel()
	if err := settle(ctx, q); err != nil {
		m.opts.Logger.Info("mcp: a completed URL-mode question was not answered for the user", "error", err.Error())
	}
}

// expire answers the server cancel when the user did not answer in time.
func (m *Manager) expire(id string) {
	if c := m.take(id); c != nil {
		c.abandon()
	}
}

// listen subscribes to this instance's channel, once.
func (m *Manager) listen(ctx context.Context) error {
	m.mu.Lock()
	subscribed := m.sub != nil
	m.mu.Unlock()
	if subscribed {
		return nil
	}
	sub, err := m.opts.Relay.Subscribe(ctx, instanceChannel(m.instance))
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.sub != nil || m.closed {
		m.mu.Unlock()
		sub.Close()
		return nil
	}
	m.sub = sub
	m.mu.Unlock()
	go func() {
		for data := range sub.C {
			var msg relayMsg
			if json.Unmarshal(data, &msg) == nil && msg.Reply != "" {
				go m.answer(msg)
			}
		}
	}()
	return nil
}

// answer gives a held call the user's answer and replies with what the call
// did next.
func (m *Manager) answer(msg relayMsg) {
	reply := func(r replyMsg) {
		data, err := json.Marshal(r)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.opts.AckTimeout)
		defer cancel()
		if _, err := m.opts.Relay.Publish(ctx, msg.Reply, data); err != nil {
			m.opts.Logger.Warn("mcp: could not reply to the instance that received an answer", "error", err.Error())
		}
	}
	c := m.take(msg.Hold)
	if c == nil {
		reply(replyMsg{Kind: "gone", Error: "the server's question expired or was answered already"})
		return
	}
	reply(replyMsg{Kind: "ack"})
	m.mu.Lock()
	a := c.ask
	c.ask = nil
	m.mu.Unlock()
	if a != nil { // nil when the server said the question was complete
		a.answer <- &mcp.ElicitResult{Action: string(msg.Result.Action), Content: msg.Result.Content}
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.HoldTTL)
	defer cancel()
	a, o, err := c.next(ctx, func(st agent.ToolStatus) {
		data, err := json.Marshal(st)
		if err == nil {
			reply(replyMsg{Kind: "progress", Progress: data})
		}
	})
	switch {
	case err != nil:
		reply(replyMsg{Kind: "gone", Error: "the server did not finish the call in time"})
	case a != nil:
		state, err := m.holdState(ctx, c, a)
		if err != nil {
			reply(replyMsg{Kind: "gone", Error: err.Error()})
			return
		}
		reply(replyMsg{Kind: "ask", Ask: a.params, State: state})
	case c.keepsSession(o):
		// The retry was refused too: the pages it names, on the same
		// session.
		pre, _, _ := prerequisites(o.err)
		a, err := c.awaitPages(pre)
		if err == nil {
			var state json.RawMessage
			if state, err = m.holdState(ctx, c, a); err == nil {
				reply(replyMsg{Kind: "ask", Ask: a.params, State: state})
				return
			}
		} else {
			c.finish()
		}
		reply(replyMsg{Kind: "gone", Error: err.Error()})
	case o.err != nil:
		reply(replyMsg{Kind: "error", Error: o.err.Error()})
	default:
		raw := o.raw
		if raw == nil {
			raw, _ = json.Marshal(o.res)
		}
		reply(replyMsg{Kind: "result", Result: raw})
	}
}

// deliver sends the user's answer to the instance holding the call and
// returns what the call did next.
func (s *Server) deliver(ctx context.Context, st toolState, res elicit.Result, report func(agent.ToolStatus)) (agent.ToolResult, error) {
	m := s.m
	replyTo := "chatd:mcp:reply:" + uuid.NewString()
	sub, err := m.opts.Relay.Subscribe(ctx, replyTo)
	if err != nil {
		return agent.ToolResult{}, fmt.Errorf("%w: %v", errNotCompleted, err)
	}
	defer sub.Close()
	data, err := json.Marshal(relayMsg{Hold: st.Hold, Reply: replyTo, Result: res})
	if err != nil {
		return agent.ToolResult{}, err
	}
	n, err := m.opts.Relay.Publish(ctx, instanceChannel(st.Instance), data)
	if err != nil {
		return agent.ToolResult{}, fmt.Errorf("%w: %v", errNotCompleted, err)
	}
	if n == 0 {
		return agent.ToolResult{}, fmt.Errorf("%w: the chatd instance that was running it is gone", errNotCompleted)
	}
	ack := time.NewTimer(m.opts.AckTimeout)
	defer ack.Stop()
	acked := false
	for {
		select {
		case data, ok := <-sub.C:
			if !ok {
				return agent.ToolResult{}, fmt.Errorf("%w: the answer's channel closed", errNotCompleted)
			}
			var r replyMsg
			if json.Unmarshal(data, &r) != nil {
				continue
			}
			switch r.Kind {
			case "ack":
				acked = true
			case "progress":
				var p agent.ToolStatus
				if report != nil && json.Unmarshal(r.Progress, &p) == nil {
					report(p)
				}
			case "gone":
				return agent.ToolResult{}, fmt.Errorf("%w: %s", errNotCompleted, r.Error)
			case "error":
				return agent.ToolResult{}, errors.New(r.Error)
			case "ask":
				req, err := askedRequest(r.Ask)
				if err != nil {
					return agent.ToolResult{}, err
				}
				return agent.ToolResult{Pause: &agent.ToolPause{Request: req, State: r.State}}, nil
			case "result":
				out, next, err := s.result(outcome{raw: r.Result})
				if err == nil && next != nil {
					err = errors.New("the server asked for input in a way chatd did not expect")
				}
				return out, err
			}
		case <-ack.C:
			if !acked {
				return agent.ToolResult{}, fmt.Errorf("%w: the chatd instance that was running it does not answer", errNotCompleted)
			}
		case <-ctx.Done():
			return agent.ToolResult{}, ctx.Err()
		}
	}
}
