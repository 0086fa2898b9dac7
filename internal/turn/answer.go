package turn

import "context"

// Answer answers a paused turn's elicitation on chatd's own account — no
// client waits for the reply — and runs the resumed turn to its end. It
// returns BeginAnswer's errors, or the resumed turn's.
func (e *Engine) Answer(ctx context.Context, a Answer) error {
	t, err := e.BeginAnswer(ctx, a)
	if err != nil {
		return err
	}
	for _, err := range t.Events(ctx, -1) {
		if err != nil {
			return err
		}
	}
	return nil
}
