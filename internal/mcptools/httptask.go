package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpSender sends chatd's own requests on a streamable HTTP session:
// go-sdk's connection cannot be wrapped without losing its session
// handling, so each request is a POST of chatd's own carrying the
// session's ID and protocol version. The server answers in the POST's
// response, as JSON or an SSE stream; on a stream it may first send
// progress and the questions of the task (2025-11-25 delivers a task's
// elicitation/create inside tasks/result), which go to the call in flight
// on the session, their answers POSTed back.
type httpSender struct {
	s      *Server
	x      *session
	client *http.Client
}

// maxMessage bounds one JSON-RPC message chatd reads from a response.
const maxMessage = 16 << 20

func (h *httpSender) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	data, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id, err := jsonrpc.MakeID("chatd-" + uuid.NewString())
	if err != nil {
		return nil, err
	}
	resp, err := h.post(ctx, &jsonrpc.Request{ID: id, Method: method, Params: data}, taskName(params))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: the server answered HTTP %d", method, resp.StatusCode)
	}
	var answer *jsonrpc.Response
	onMessage := func(raw []byte) bool {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return false
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if idKey(m.ID) == idKey(id) {
				answer = m
				return true
			}
		case *jsonrpc.Request:
			h.serverMessage(ctx, m)
		}
		return false
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		err = readEvents(resp.Body, onMessage)
	} else {
		var body []byte
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxMessage))
		if err == nil {
			onMessage(body)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if answer == nil {
		if err == nil {
			err = errors.New("the server's response held no answer")
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if answer.Error != nil {
		return nil, fmt.Errorf("%s: %w", method, answer.Error)
	}
	return answer.Result, nil
}

// taskName is the task ID a request's params name, which a 2026-07-28
// request about a task carries in its Mcp-Name header too, for the
// gateways that route it to the task's instance.
func taskName(params any) string {
	p, _ := params.(map[string]any)
	id, _ := p["taskId"].(string)
	return id
}

// post sends one JSON-RPC message on the session; name is the request's
// Mcp-Name header, if it has one.
func (h *httpSender) post(ctx context.Context, msg jsonrpc.Message, name string) (*http.Response, error) {
	body, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid := h.x.cs.ID(); sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if init := h.x.cs.InitializeResult(); init != nil {
		req.Header.Set("Mcp-Protocol-Version", init.ProtocolVersion)
		if r, ok := msg.(*jsonrpc.Request); ok && usesRequestMeta(h.x.cs) {
			req.Header.Set("Mcp-Method", r.Method)
			if name != "" {
				req.Header.Set("Mcp-Name", name)
			}
		}
	}
	return h.client.Do(req)
}

// serverMessage handles what the server sends inside one of chatd's
// requests: progress goes to its call, a question to the user (answered
// without holding up the stream), anything else it asks is refused.
func (h *httpSender) serverMessage(ctx context.Context, req *jsonrpc.Request) {
	if !req.ID.IsValid() {
		h.s.cap.notified(req)
		return
	}
	go func() {
		reply := &jsonrpc.Response{ID: req.ID}
		if req.Method == "elicitation/create" {
			var params mcp.ElicitParams
			if err := json.Unmarshal(req.Params, &params); err != nil {
				reply.Error = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid elicitation/create params"}
			} else {
				h.s.mu.Lock()
				c := h.x.current
				h.s.mu.Unlock()
				res, err := h.s.askInCall(ctx, c, &params)
				if err != nil {
					return // the call ended: the server hears its cancellation
				}
				if reply.Result, err = json.Marshal(res); err != nil {
					return
				}
			}
		} else {
			reply.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: req.Method + " is not supported"}
		}
		resp, err := h.post(context.WithoutCancel(ctx), reply, "")
		if err != nil {
			h.s.m.opts.Logger.Info("mcp answer not delivered", "mcp_server", h.s.cfg.Name, "error", err.Error())
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMessage))
		_ = resp.Body.Close()
	}()
}

// readEvents passes the data of each SSE event of r to onMessage until it
// returns true or the stream ends.
func readEvents(r io.Reader, onMessage func([]byte) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxMessage)
	var data []byte
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		switch {
		case len(line) == 0:
			if len(data) > 0 && onMessage(data) {
				return nil
			}
			data = nil
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(data) > 0 && onMessage(data) {
		return nil
	}
	return errors.New("the server's stream ended without an answer")
}
