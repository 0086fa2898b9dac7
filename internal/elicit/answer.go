package elicit

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Typed reads of an answer, for processors. Content arrives as the API
// decoded it — numbers as json.Number, multi-selects as []any — or as a
// processor built it in Go; these accessors read either, so a processor
// never switches on JSON number types. Each reports false when the property
// is absent or does not hold that type.

// String returns the string answer to property name: a string, date,
// date-time, email or uri field, or a single-select's chosen value.
func (r Result) String(name string) (string, bool) {
	s, ok := r.Content[name].(string)
	return s, ok
}

// Bool returns the boolean answer to property name.
func (r Result) Bool(name string) (bool, bool) {
	b, ok := r.Content[name].(bool)
	return b, ok
}

// Float returns the number answer to property name as the nearest float64.
// A number beyond float64's range reports false.
func (r Result) Float(name string) (float64, bool) {
	nv, isNumber, ok := toNumber(r.Content[name])
	return nv.f, isNumber && ok
}

// Int returns the answer to property name as an int64 when it is an
// integer within int64's range, exactly: 9007199254740993 is returned as
// such, not rounded through a float64, and 1.0 and 1e2 count as the
// integers they are.
func (r Result) Int(name string) (int64, bool) {
	switch v := r.Content[name].(type) {
	case json.Number:
		return exactInt(string(v))
	case float64:
		if v != math.Trunc(v) || v < math.MinInt64 || v >= math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case float32:
		return Result{Content: map[string]any{name: float64(v)}}.Int(name)
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint:
		return exactInt(strconv.FormatUint(uint64(v), 10))
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint64:
		return exactInt(strconv.FormatUint(v, 10))
	}
	return 0, false
}

// exactInt converts JSON number text to an int64 without rounding.
func exactInt(s string) (int64, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, true
	}
	n, ok := scanNumber(s)
	if !ok || !n.integral() || n.exp > 100 || n.exp < -400 {
		return 0, false // an exponent this large is far outside int64
	}
	f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
	if err != nil {
		return 0, false
	}
	i, acc := f.Int64()
	return i, acc == big.Exact
}

// Strings returns a multi-select's chosen values, in the order given.
func (r Result) Strings(name string) ([]string, bool) {
	switch v := r.Content[name].(type) {
	case []string:
		return v, true
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// Describe renders res, an answer to r, as the readable text history
// records for block-unaware consumers: "Declined.", "Cancelled.", or
// "Accepted — Title: Team sync; Date: 2026-12-03; Notify: yes", naming each
// answered property by its title (its name when it has none) in the form's
// order, booleans as yes/no, and selections by their options' titles.
func (r *Request) Describe(res Result) string {
	switch res.Action {
	case Decline:
		return "Declined."
	case Cancel:
		return "Cancelled."
	}
	if len(res.Content) == 0 {
		return "Accepted."
	}
	s, _ := r.parsed()
	titles := r.optionTitles()
	var parts []string
	described := 0
	if s != nil {
		for _, p := range s.props {
			v, ok := res.Content[p.name]
			if !ok {
				continue
			}
			described++
			label := p.title
			if label == "" {
				label = p.name
			}
			parts = append(parts, label+": "+describeValue(v, titles[p.name]))
		}
	}
	if described < len(res.Content) {
		// Only for content Validate would refuse; kept readable anyway.
		var extra []string
		for k := range res.Content {
			if s == nil || !s.declares(k) {
				extra = append(extra, k)
			}
		}
		slices.Sort(extra)
		for _, k := range extra {
			parts = append(parts, k+": "+describeValue(res.Content[k], nil))
		}
	}
	return "Accepted — " + strings.Join(parts, "; ")
}

func (s *schema) declares(name string) bool {
	_, ok := s.index[name]
	return ok
}

func describeValue(v any, titles map[string]string) string {
	switch v := v.(type) {
	case string:
		if t, ok := titles[v]; ok && t != "" {
			return t
		}
		return v
	case []any:
		items := make([]string, len(v))
		for i, item := range v {
			items[i] = describeValue(item, titles)
		}
		return strings.Join(items, ", ")
	case []string:
		items := make([]string, len(v))
		for i, item := range v {
			items[i] = describeValue(item, titles)
		}
		return strings.Join(items, ", ")
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case json.Number:
		return string(v)
	case nil:
		return "null"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(data)
}

// optionTitles maps, per select property, each option value to its title:
// oneOf and items.anyOf titles, or the legacy enumNames. The schema was
// checked when the request was made, so this reads it without checking.
func (r *Request) optionTitles() map[string]map[string]string {
	type option struct {
		Const string `json:"const"`
		Title string `json:"title"`
	}
	var doc struct {
		Properties map[string]struct {
			OneOf     []option `json:"oneOf"`
			Enum      []any    `json:"enum"`
			EnumNames []string `json:"enumNames"`
			Items     struct {
				AnyOf []option `json:"anyOf"`
			} `json:"items"`
		} `json:"properties"`
	}
	if json.Unmarshal(r.RequestedSchema, &doc) != nil {
		return nil
	}
	out := map[string]map[string]string{}
	for name, p := range doc.Properties {
		m := map[string]string{}
		for _, o := range append(p.OneOf, p.Items.AnyOf...) {
			m[o.Const] = o.Title
		}
		if len(p.EnumNames) == len(p.Enum) {
			for i, e := range p.Enum {
				if s, ok := e.(string); ok {
					m[s] = p.EnumNames[i]
				}
			}
		}
		if len(m) > 0 {
			out[name] = m
		}
	}
	return out
}
