package agent_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestH2CModelStreamsShareAConnection runs turns against a model that
// speaks only HTTP/2 without TLS: with h2c set, every turn reaches it, and
// concurrent turns stream over the one connection.
func TestH2CModelStreamsShareAConnection(t *testing.T) {
	m := &fakeModel{}
	answer := textReply("over", " h2c")
	m.fallback = &answer
	var protos sync.Map // ProtoMajor → true
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.ProtoMajor, true)
		m.serve(w, r)
	})
	m.Server = httptest.NewUnstartedServer(mux)
	m.Config.Protocols = new(http.Protocols)
	m.Config.Protocols.SetUnencryptedHTTP2(true)
	var conns atomic.Int32
	m.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	m.Start()
	t.Cleanup(m.Close)

	cfg := agentConfig(m)
	cfg.H2C, cfg.AskUser = true, false
	c := newMemoryChatd(t, mustAgent(t, cfg))
	assert.Equal(t, "over h2c", c.mustTurn(t, c.mustThread(t), "first").Message.Text)

	const turns = 8
	threads := make([]string, turns)
	for i := range threads {
		threads[i] = c.mustThread(t)
	}
	var wg sync.WaitGroup
	for _, id := range threads {
		wg.Go(func() {
			status, body := c.turn(t, id, "hi")
			var res turnResult
			assert.Equal(t, http.StatusOK, status, "%s", body)
			assert.NoError(t, json.Unmarshal(body, &res))
			assert.Equal(t, "over h2c", res.Message.Text)
		})
	}
	wg.Wait()
	require.Len(t, m.sent(), turns+1)
	_, h1 := protos.Load(1)
	assert.False(t, h1, "no request went over HTTP/1.1")
	assert.Equal(t, int32(1), conns.Load(), "the turns' streams shared one connection")
}
