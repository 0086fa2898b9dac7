package api

import "net/http"

// jsonDepth returns how deeply body's arrays and objects nest, stopping as
// soon as it exceeds limit (it then returns limit+1). It only counts
// brackets outside strings, so it is a linear scan with no allocation: it
// runs before a body is decoded, whose cost grows with the nesting.
func jsonDepth(body []byte, limit int) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// checkDepth refuses a body nested deeper than limit (CHATD_MAX_JSON_DEPTH).
func checkDepth(body []byte, limit int) error {
	if jsonDepth(body, limit) > limit {
		return errorf(http.StatusBadRequest, "invalid_request", "malformed JSON body: nested deeper than %d levels", limit)
	}
	return nil
}

// arrayLen counts the elements of raw, a JSON array already known to be
// valid, without decoding them: a message's blocks are counted against
// CHATD_MAX_BLOCKS before the cost of decoding each one is paid.
func arrayLen(raw []byte) int {
	n, depth := 0, 0
	inString, escaped, empty := false, false, true
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth == 1 {
				continue
			}
		case c == ']' || c == '}':
			depth--
			continue
		case c == ',' && depth == 1:
			n++
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		if depth >= 1 {
			empty = false
		}
	}
	if empty {
		return 0
	}
	return n + 1
}
