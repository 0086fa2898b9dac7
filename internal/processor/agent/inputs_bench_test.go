package agent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chatd/internal/processor/agent"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// BenchmarkAgentTurnWithImage runs agent turns whose message links a 1 MiB
// image file, which the agent reads from the store and sends as a data URL,
// against turns with the same text and no file, alternating in the same run
// on an instant model over loopback. It reports both per turn and their
// ratio: the cost of reading and encoding the file.
func BenchmarkAgentTurnWithImage(b *testing.B) {
	model := instantModel(b, twentyWords, nil)
	st := store.NewMemory(testStoreOpts)
	b.Cleanup(func() { _ = st.Close() })
	cfg := agent.Config{BaseURL: model.URL + "/v1", Model: "test-model", MaxSteps: agent.DefaultMaxSteps,
		HistoryWindow: 0, Inputs: []string{agent.InputImage}, Files: storeReader{st}}
	c := newChatd(b, st, mustAgent(b, cfg), turn.DefaultConfig)
	thread := c.mustThread(b)
	image := append(append([]byte(nil), inputPNG...), bytes.Repeat([]byte{9}, 1<<20-len(inputPNG))...)
	uri := c.mustUpload(b, thread, "big.png", "image/png", image)
	plain, err := json.Marshal(map[string]any{"message": "what is this?"})
	require.NoError(b, err)
	withImage, err := json.Marshal(map[string]any{"message": "what is this?",
		"content_blocks": []map[string]any{link(uri, "big.png", "image/png")}})
	require.NoError(b, err)
	post := func(body []byte) time.Duration {
		start := time.Now()
		resp, err := c.Client().Post(c.URL+"/v1/threads/"+thread+"/turns", "application/json", bytes.NewReader(body))
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode)
		return time.Since(start)
	}
	var without, with time.Duration
	b.ResetTimer()
	for range b.N {
		without += post(plain)
		with += post(withImage)
	}
	n := float64(b.N)
	b.ReportMetric(float64(without.Microseconds())/n, "µs/turn_no_file")
	b.ReportMetric(float64(with.Microseconds())/n, "µs/turn_1MiB_image")
	b.ReportMetric(with.Seconds()/without.Seconds(), "x_no_file")
}
