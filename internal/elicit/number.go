package elicit

import (
	"encoding/json"
	"math"
	"strconv"
)

// jsonNumber is a JSON number literal split into its parts.
type jsonNumber struct {
	intDigits  string // digits before the decimal point
	fracDigits string // digits after it, trailing zeros removed
	exp        int64  // the exponent, saturated far beyond float64's range
}

// scanNumber parses s with the JSON number grammar of RFC 8259. It rejects
// what strconv.ParseFloat would otherwise accept ("Inf", "0x1p3", "1_0"), so
// a json.Number built in Go is held to the same rules as one read off the
// wire.
func scanNumber(s string) (n jsonNumber, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n.intDigits = s[start:i]
	if n.intDigits == "" || (len(n.intDigits) > 1 && n.intDigits[0] == '0') {
		return n, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return n, false
		}
		frac := s[start:i]
		for len(frac) > 0 && frac[len(frac)-1] == '0' {
			frac = frac[:len(frac)-1]
		}
		n.fracDigits = frac
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			// Saturate: any exponent this large already means ±Inf or 0.
			if n.exp < 1e12 {
				n.exp = n.exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == start {
			return n, false
		}
		if neg {
			n.exp = -n.exp
		}
	}
	return n, i == len(s)
}

// integral reports whether the number is an integer. It works on the
// decimal digits rather than on a float64, so 1.0000000000000000001 is not
// an integer even though it rounds to one, while 1.0, 1e2 and 1.50e1 are.
func (n jsonNumber) integral() bool {
	if allZero(n.intDigits) && n.fracDigits == "" {
		return true
	}
	// The value is digits(int ++ frac) × 10^k.
	k := n.exp - int64(len(n.fracDigits))
	if k >= 0 {
		return true
	}
	if n.fracDigits != "" {
		// frac ends in a non-zero digit that a negative k leaves after the
		// decimal point.
		return false
	}
	tz := int64(0)
	for j := len(n.intDigits) - 1; j >= 0 && n.intDigits[j] == '0'; j-- {
		tz++
	}
	return tz >= -k
}

func allZero(digits string) bool {
	for i := 0; i < len(digits); i++ {
		if digits[i] != '0' {
			return false
		}
	}
	return true
}

// numberValue is a number taken from client input or from a schema: its
// float64 value for range checks and whether it is an integer.
type numberValue struct {
	f        float64
	integral bool
}

// parseNumberText parses JSON number text. ok is false when the text is not
// a JSON number or lies beyond float64's range: such a value cannot be
// compared with bounds the way every JavaScript frontend compares them.
func parseNumberText(s string) (numberValue, bool) {
	n, ok := scanNumber(s)
	if !ok {
		return numberValue{}, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return numberValue{}, false
	}
	return numberValue{f: f, integral: n.integral()}, true
}

// toNumber converts a decoded content value to a number. isNumber is false
// when v is not a number at all; ok is false when it is one chatd cannot
// accept (malformed json.Number, NaN, ±Inf).
func toNumber(v any) (nv numberValue, isNumber, ok bool) {
	var f float64
	switch x := v.(type) {
	case json.Number:
		nv, ok = parseNumberText(string(x))
		return nv, true, ok
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		return numberValue{f: float64(x), integral: true}, true, true
	case int8:
		return numberValue{f: float64(x), integral: true}, true, true
	case int16:
		return numberValue{f: float64(x), integral: true}, true, true
	case int32:
		return numberValue{f: float64(x), integral: true}, true, true
	case int64:
		return numberValue{f: float64(x), integral: true}, true, true
	case uint:
		return numberValue{f: float64(x), integral: true}, true, true
	case uint8:
		return numberValue{f: float64(x), integral: true}, true, true
	case uint16:
		return numberValue{f: float64(x), integral: true}, true, true
	case uint32:
		return numberValue{f: float64(x), integral: true}, true, true
	case uint64:
		return numberValue{f: float64(x), integral: true}, true, true
	default:
		return numberValue{}, false, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return numberValue{}, true, false
	}
	return numberValue{f: f, integral: math.Trunc(f) == f}, true, true
}
