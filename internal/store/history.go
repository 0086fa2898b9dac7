package store

import (
	"bytes"
	"errors"
)

// splitRecords splits script reply strings, each one or more
// newline-separated message JSON records (see lua/lib/history.lua), into the records.
func splitRecords(data []any) ([][]byte, error) {
	out := make([][]byte, 0, len(data))
	for _, v := range data {
		s, ok := replyString(v)
		if !ok {
			return nil, errors.New("store: corrupt history reply")
		}
		for rec := range bytes.SplitSeq([]byte(s), []byte{'\n'}) {
			if len(rec) > 0 {
				out = append(out, rec)
			}
		}
	}
	return out, nil
}
