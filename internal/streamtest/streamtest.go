// Package streamtest holds what the benchmarks of streamed turns share:
// timing the first data line of a Server-Sent Events answer, and an HTTP
// round tripper from a function, for servers answered in process.
package streamtest

import (
	"bufio"
	"bytes"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FirstData posts req and returns when the first SSE data line containing
// marker has been read, then drains the stream.
func FirstData(tb testing.TB, client *http.Client, req *http.Request, marker string) time.Time {
	tb.Helper()
	resp, err := client.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	require.Equal(tb, http.StatusOK, resp.StatusCode)
	r := bufio.NewReader(resp.Body)
	var at time.Time
	for {
		line, err := r.ReadSlice('\n')
		if at.IsZero() && bytes.HasPrefix(line, []byte("data: ")) && bytes.Contains(line, []byte(marker)) {
			at = time.Now()
		}
		if err != nil {
			break
		}
	}
	require.False(tb, at.IsZero(), "no data line with %q", marker)
	return at
}

// Percentile is the p-th percentile of ds (0 for none).
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// RoundTripper answers HTTP requests with a function.
type RoundTripper func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f RoundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
