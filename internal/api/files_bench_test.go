package api_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
	"chatd/internal/store"
)

// BenchmarkFileTransfer uploads and downloads a 5 MiB file through chatd
// and reports its throughput as a ratio of io.Copy of the same bytes over
// loopback HTTP, measured in the same run, iteration by iteration (goal:
// at least 0.5). It also reports the CPU each transfer costs, as a ratio
// of io.Copy's: the benchmark's process (client and server) and, for
// Redis, redis-server. A transfer through Redis crosses a loopback socket
// twice where io.Copy crosses it once, so on a machine with few cores,
// where the transfers are CPU-bound, the CPU ratio bounds the throughput
// ratio.
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

	// stores return a server and the CPU time its store's own process has
	// used so far (none for the embedded store).
	stores := map[string]func(b *testing.B) (*testServer, func() time.Duration){
		"memory": func(b *testing.B) (*testServer, func() time.Duration) {
			opts := testStoreOpts
			opts.MemoryMaxBytes = 1 << 30
			return newTestServer(b, withStore(store.NewMemory(opts))), func() time.Duration { return 0 }
		},
		"redis": func(b *testing.B) (*testServer, func() time.Duration) {
			srv := redistest.Start(b)
			st, err := store.OpenRedis(srv.URL(), testStoreOpts)
			require.NoError(b, err)
			b.Cleanup(func() { _ = st.Close() })
			return newTestServer(b, withStore(st)), func() time.Duration { return redisCPU(b, srv) }
		},
	}
	for _, kind := range []string{"memory", "redis"} {
		b.Run(kind, func(b *testing.B) {
			ts, storeCPU := stores[kind](b)
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
			// A phase's wall time and CPU time: the process's and the store's.
			type phase struct{ wall, cpu time.Duration }
			var upBase, upChatd, downBase, downChatd phase
			measure := func(p *phase, withStore bool, fn func()) {
				cpu0, store0 := processCPU(b), time.Duration(0)
				if withStore {
					store0 = storeCPU()
				}
				start := time.Now()
				fn()
				p.wall += time.Since(start)
				p.cpu += processCPU(b) - cpu0
				if withStore {
					p.cpu += storeCPU() - store0
				}
			}
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				measure(&upBase, false, func() { send(http.MethodPost, baseline.URL, data) })
				var f wireFile
				measure(&upChatd, true, func() {
					req, _ := http.NewRequest(http.MethodPost, upload, bytes.NewReader(data))
					req.Header.Set(principalHeader, alice)
					req.Header.Set("Content-Type", "application/octet-stream")
					resp, err := client.Do(req)
					require.NoError(b, err)
					require.NoError(b, json.NewDecoder(resp.Body).Decode(&f))
					_ = resp.Body.Close()
					require.Equal(b, http.StatusCreated, resp.StatusCode)
				})
				measure(&downBase, false, func() { send(http.MethodGet, baseline.URL, nil) })
				measure(&downChatd, true, func() {
					got := send(http.MethodGet, ts.URL+filePath(thread, f.ID), nil)
					require.Equal(b, http.StatusOK, got.StatusCode)
				})

				send(http.MethodDelete, ts.URL+filePath(thread, f.ID), nil)
			}
			mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / (1 << 20) }
			b.ReportMetric(mbps(upChatd.wall), "upload_MiB/s")
			b.ReportMetric(mbps(downChatd.wall), "download_MiB/s")
			b.ReportMetric(upBase.wall.Seconds()/upChatd.wall.Seconds(), "upload_x_io.Copy")
			b.ReportMetric(downBase.wall.Seconds()/downChatd.wall.Seconds(), "download_x_io.Copy")
			b.ReportMetric(upChatd.cpu.Seconds()/upBase.cpu.Seconds(), "upload_cpu_x_io.Copy")
			b.ReportMetric(downChatd.cpu.Seconds()/downBase.cpu.Seconds(), "download_cpu_x_io.Copy")
			// How many cores io.Copy keeps busy: what is left for the rest.
			b.ReportMetric(upBase.cpu.Seconds()/upBase.wall.Seconds(), "io.Copy_upload_cores")
			b.ReportMetric(downBase.cpu.Seconds()/downBase.wall.Seconds(), "io.Copy_download_cores")
		})
	}
}

// processCPU is the CPU time the process has used so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the CPU time srv has used so far (INFO cpu).
func redisCPU(tb testing.TB, srv *redistest.Server) time.Duration {
	reply, err := srv.Do(tb.Context(), "INFO", "cpu")
	require.NoError(tb, err)
	info, _ := reply.(string)
	var total time.Duration
	for line := range strings.Lines(info) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			sec, err := strconv.ParseFloat(v, 64)
			require.NoError(tb, err)
			total += time.Duration(sec * float64(time.Second))
		}
	}
	return total
}
