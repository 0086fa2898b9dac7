package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// op is one measured operation: worker is the caller's index in
// [0, concurrency), seq the operation's index in the run. It may return a
// second latency measured inside the operation (time to first delta), or 0.
type op func(ctx context.Context, worker, seq int) (inner time.Duration, err error)

// loadSpec bounds a run: at most requests operations and at most limit of
// wall time, spread over concurrency workers.
type loadSpec struct {
	requests    int
	concurrency int
	limit       time.Duration
}

// loadResult is what a run measured.
type loadResult struct {
	done    int
	errors  int
	elapsed time.Duration
	latency []time.Duration
	inner   []time.Duration
	// firstErr is the first failure, to explain a non-zero error count.
	firstErr error
}

// throughput is completed operations per second of wall time.
func (r loadResult) throughput() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.done) / r.elapsed.Seconds()
}

// runLoad runs fn until spec.requests operations have been started or
// spec.limit has passed, whichever comes first, and collects latencies of
// the ones that succeeded.
func runLoad(ctx context.Context, spec loadSpec, fn op) loadResult {
	ctx, cancel := context.WithTimeout(ctx, spec.limit)
	defer cancel()
	var next atomic.Int64
	type workerResult struct {
		latency, inner []time.Duration
		errors         int
		firstErr       error
	}
	results := make([]workerResult, spec.concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range spec.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := &results[w]
			res.latency = make([]time.Duration, 0, spec.requests/spec.concurrency+1)
			for ctx.Err() == nil {
				seq := int(next.Add(1)) - 1
				if seq >= spec.requests {
					return
				}
				t0 := time.Now()
				inner, err := fn(ctx, w, seq)
				d := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						// Cut off by the time bound: neither a success nor a failure.
						return
					}
					res.errors++
					if res.firstErr == nil {
						res.firstErr = fmt.Errorf("operation %d: %w", seq, err)
					}
					continue
				}
				res.latency = append(res.latency, d)
				if inner > 0 {
					res.inner = append(res.inner, inner)
				}
			}
		}()
	}
	wg.Wait()
	out := loadResult{elapsed: time.Since(start)}
	for _, r := range results {
		out.latency = append(out.latency, r.latency...)
		out.inner = append(out.inner, r.inner...)
		out.errors += r.errors
		if out.firstErr == nil {
			out.firstErr = r.firstErr
		}
	}
	out.done = len(out.latency)
	slices.Sort(out.latency)
	slices.Sort(out.inner)
	return out
}

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of
// sorted, or 0 when it is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// merge adds the measurements of another run of the same operation.
func (r loadResult) merge(o loadResult) loadResult {
	r.done += o.done
	r.errors += o.errors
	r.elapsed += o.elapsed
	r.latency = append(r.latency, o.latency...)
	r.inner = append(r.inner, o.inner...)
	slices.Sort(r.latency)
	slices.Sort(r.inner)
	if r.firstErr == nil {
		r.firstErr = o.firstErr
	}
	return r
}
