package store

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzThreadCursor checks the thread list's cursor, which clients send back
// as ?before=: anything that is not a cursor chatd minted is refused as
// ErrUnknownCursor, and a cursor that parses stands for the same position
// once re-minted.
func FuzzThreadCursor(f *testing.F) {
	f.Add(threadCursor{updated: 1764547200000, id: "01a22f15-4de9-7d97-8366-7c7f7c3354ce"}.String())
	f.Add(threadCursor{updated: -1, id: ":"}.String())
	f.Add("MTc2NDU0NzIwMDAwMDo")
	f.Add("not a cursor")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseThreadCursor(s)
		if err != nil {
			if !errors.Is(err, ErrUnknownCursor) {
				t.Fatalf("parseThreadCursor(%q): %v, not ErrUnknownCursor", s, err)
			}
			return
		}
		if s == "" {
			return
		}
		again, err := parseThreadCursor(c.String())
		if err != nil || again != c {
			t.Fatalf("cursor %q parsed as %+v, re-minted as %q, parsed again as %+v, %v", s, c, c.String(), again, err)
		}
	})
}

// FuzzTurnLog checks that a turn log's records read back as the events
// written, whatever their data holds (newlines, record headers, nothing),
// the last one marked Last, and that reading a damaged log fails cleanly
// instead of panicking.
func FuzzTurnLog(f *testing.F) {
	f.Add(1, "message.start", []byte(`{"turn_id":"t"}`), []byte(`{"delta":"a\n2 text.delta 3\n"}`))
	f.Add(7, "text.delta", []byte{}, []byte("\n\n"))
	f.Fuzz(func(t *testing.T, id int, name string, first, second []byte) {
		if len(strings.Fields(name)) != 1 || strings.Fields(name)[0] != name {
			// Event names are chatd's own, one word each.
			return
		}
		want := []TurnEvent{{ID: id, Name: name, Data: first}, {ID: id + 1, Name: name, Data: second, Last: true}}
		var log []byte
		for _, e := range want {
			log = appendRecord(log, e)
		}
		got, err := parseLog(string(log))
		if err != nil {
			t.Fatalf("parseLog of %q: %v", log, err)
		}
		if len(got) != len(want) {
			t.Fatalf("parseLog of %q: %d events, want %d", log, len(got), len(want))
		}
		for i := range want {
			// A record without the flag named as a last event was before
			// the flag existed is read as last (endedLog).
			last := want[i].Last || endedLog(name)
			if got[i].ID != want[i].ID || got[i].Name != want[i].Name || !bytes.Equal(got[i].Data, want[i].Data) || got[i].Last != last {
				t.Fatalf("event %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
		// Any cut of the log is read without a panic; cutting into a
		// record's data is reported, never read as a shorter event.
		for n := range len(log) {
			events, err := parseLog(string(log[:n]))
			if err == nil && len(events) > 0 {
				last := events[len(events)-1]
				if !bytes.Equal(last.Data, want[len(events)-1].Data) {
					t.Fatalf("cut at %d: last event %+v read short", n, last)
				}
			}
		}
	})
}
