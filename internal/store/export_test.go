package store

// QueuedAppends is how many appends wait for the next pipeline.
func (r *Redis) QueuedAppends() int {
	r.appends.mu.Lock()
	defer r.appends.mu.Unlock()
	return len(r.appends.queue)
}
