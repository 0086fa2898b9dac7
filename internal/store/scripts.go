package store

// Every Redis operation is one of these Lua scripts: Redis runs a script
// without interleaving any other command, so each operation is atomic, and
// because a script names only one thread's keys (all in one hash slot) it
// runs on one Cluster node. Scripts answer with an array whose first element
// is a status word; "OK" is followed by the operation's data.
//
// Every script that writes is idempotent for a repeated call with the same
// arguments: go-redis re-sends a command whose reply did not arrive in time
// (ReadTimeout, MaxRetries), although the first send may have run. A begin's
// lock token and a create's or commit's call ID are minted once per store
// call, so a re-sent script carries the same one and recognises the state
// its first run left: it then answers as the first run did instead of BUSY,
// CONSUMED, LOCKLOST or EXISTS, which would report a failure for work that
// was done. Another call never carries that token or ID, so it is refused as
// before.

// The scripts, each documented in its file.
var (
	createScript       = newScript("create_thread.lua")
	getScript          = newScript("get_thread.lua")
	deleteScript       = newScript("delete_thread.lua")
	beginTurnScript    = newScript("begin_turn.lua")
	beginResumeScript  = newScript("begin_resume.lua")
	commitScript       = newScript("commit_turn.lua")
	releaseScript      = newScript("release_turn.lua")
	appendEventsScript = newScript("append_events.lua")
	turnEventsScript   = newScript("turn_events.lua")
	updateThreadScript = newScript("update_thread.lua")
	listThreadsScript  = newScript("list_threads.lua")
	historyScript      = newScript("history_page.lua")
	renewScript        = newScript("renew_lock.lua")
	indexNewScript     = newScript("index_new.lua")
	existsScript       = newScript("exists.lua")
	unindexScript      = newScript("unindex.lua")
)
