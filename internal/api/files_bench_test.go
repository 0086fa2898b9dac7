package api_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
	"chatd/internal/store"
)

// BenchmarkFileTransfer uploads and downloads a 5 MiB file through chatd
// and reports its throughput as a ratio of io.Copy of the same bytes over
// loopback HTTP, measured in the same run, iteration by iteration (goal:
// at least 0.5).
func BenchmarkFileTransfer(b *testing.B) {
	const size = 5 << 20
	data := make([]byte, size)
	_, err := rand.Read(data)
	require.NoError(b, err)
	// The baseline: the same bytes through a handler that only copies them.
	baseline := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusCreated)
			return
		}
		_, _ = io.Copy(w, bytes.NewReader(data))
	}))
	b.Cleanup(baseline.Close)

	stores := map[string]func(b *testing.B) *testServer{
		"memory": func(b *testing.B) *testServer {
			opts := testStoreOpts
			opts.MemoryMaxBytes = 1 << 30
			return newTestServer(b, withStore(store.NewMemory(opts)))
		},
		"redis": func(b *testing.B) *testServer {
			st, err := store.OpenRedis(redistest.Start(b).URL(), testStoreOpts)
			require.NoError(b, err)
			b.Cleanup(func() { _ = st.Close() })
			return newTestServer(b, withStore(st))
		},
	}
	for _, kind := range []string{"memory", "redis"} {
		b.Run(kind, func(b *testing.B) {
			ts := stores[kind](b)
			thread := ts.mustCreateThread(b, alice, "echo")
			client := ts.Client()
			send := func(method, url string, body []byte) *http.Response {
				var rd io.Reader = http.NoBody
				if body != nil {
					rd = bytes.NewReader(body)
				}
				req, err := http.NewRequest(method, url, rd)
				require.NoError(b, err)
				req.Header.Set(principalHeader, alice)
				req.Header.Set("Content-Type", "application/octet-stream")
				resp, err := client.Do(req)
				require.NoError(b, err)
				_, err = io.Copy(io.Discard, resp.Body)
				require.NoError(b, err)
				_ = resp.Body.Close()
				return resp
			}
			upload := ts.URL + filesPath(thread) + "?name=bench.bin"
			var upBase, upChatd, downBase, downChatd time.Duration
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				send(http.MethodPost, baseline.URL, data)
				upBase += time.Since(start)

				start = time.Now()
				req, _ := http.NewRequest(http.MethodPost, upload, bytes.NewReader(data))
				req.Header.Set(principalHeader, alice)
				req.Header.Set("Content-Type", "application/octet-stream")
				resp, err := client.Do(req)
				require.NoError(b, err)
				var f wireFile
				require.NoError(b, json.NewDecoder(resp.Body).Decode(&f))
				_ = resp.Body.Close()
				upChatd += time.Since(start)
				require.Equal(b, http.StatusCreated, resp.StatusCode)

				start = time.Now()
				send(http.MethodGet, baseline.URL, nil)
				downBase += time.Since(start)

				start = time.Now()
				got := send(http.MethodGet, ts.URL+filePath(thread, f.ID), nil)
				downChatd += time.Since(start)
				require.Equal(b, http.StatusOK, got.StatusCode)

				send(http.MethodDelete, ts.URL+filePath(thread, f.ID), nil)
			}
			mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / (1 << 20) }
			b.ReportMetric(mbps(upChatd), "upload_MiB/s")
			b.ReportMetric(mbps(downChatd), "download_MiB/s")
			b.ReportMetric(upBase.Seconds()/upChatd.Seconds(), "upload_x_io.Copy")
			b.ReportMetric(downBase.Seconds()/downChatd.Seconds(), "download_x_io.Copy")
		})
	}
}
