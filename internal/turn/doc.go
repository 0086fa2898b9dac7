// Package turn runs chatd's turns: the one place where a turn is begun,
// its processor run, its outcome committed or its lock released, its events
// logged for reattachment and its metrics recorded.
//
// A turn is begun with Engine.Begin (a user's message) or Engine.BeginAnswer
// (the answer to a pending elicitation), which take the thread's turn lock
// and return a *Turn; Turn.Run then runs the processor and hands every
// Event to the caller's sink, in order:
//
//	EventStart      {thread_id, turn_id, message_id, user_message_id}
//	EventDelta      {delta, _meta?}            (zero or more)
//	EventCompleted  the TurnResult (status completed or input_required)
//	  or EventError a problem
//
// Transports are consumers of these events and nothing else: the JSON
// answer waits for the last one, the SSE stream writes each as it comes,
// and the frontend protocols (AI SDK, AG-UI) translate them. Every event has
// an ID, 1, 2, 3… within its turn, and is logged in the store under the
// turn's ID (the first with the begin, the last with the commit or release,
// streamed deltas in batches), so Follow can replay a turn, and follow it
// live, from any instance that shares the store.
package turn
