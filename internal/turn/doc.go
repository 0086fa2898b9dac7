// Package turn runs chatd's turns: the one place where a turn is begun,
// its processor run, its outcome committed or its lock released, its events
// logged for reattachment and its metrics recorded. It owns a turn's events
// in every form they are read in.
//
// A turn is begun with Engine.Begin (a user's message) or Engine.BeginAnswer
// (the answer to a pending elicitation), which take the thread's turn lock
// and return a *Turn. Its events, in order:
//
//	EventStart      message.start   Start {thread_id, turn_id, message_id, user_message_id}
//	EventDelta      text.delta      Delta {delta, _meta?}            (zero or more)
//	EventCompleted  turn.completed  the TurnResult (status completed or input_required)
//	  or EventError error           Failure {code, detail, errors?}
//
// There is one way to read them, whatever their source: as an
// iter.Seq2[Event, error] of typed events. Turn.Events runs a begun turn
// (or replays an idempotent retry's outcome); Engine.Events reads a turn's
// log after a Last-Event-ID and follows it live, from any instance that
// shares the store. Transports are writers over that sequence and nothing
// else: the JSON answer waits for the last event, the SSE and reattach
// streams write each as it comes, and the frontend protocols (AI SDK,
// AG-UI) translate them. Every event has an ID, 1, 2, 3… within its turn,
// and is logged in the store under the turn's ID (the first with the
// begin, the last with the commit or release, streamed deltas in batches),
// so a reattached reader sees the same events, IDs and data as the turn's
// own consumer.
package turn
