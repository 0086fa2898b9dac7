package blocks

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// validateBlockValue checks that v is a block object and validates it,
// returning the object (nil when v is not one).
func validateBlockValue(v any, path string, ve *ValidationError) map[string]any {
	obj, ok := v.(map[string]any)
	if !ok {
		ve.Add(path, "must be a content block object, not "+kindOf(v))
		return nil
	}
	validateBlock(obj, path, ve)
	return obj
}

// validateBlock records every violation in obj under path. Fields that are
// not part of the block's type are left alone: they are preserved, not
// judged.
func validateBlock(obj map[string]any, path string, ve *ValidationError) {
	switch t, ok := obj["type"]; {
	case !ok:
		ve.Add(JoinPath(path, "type"), "is required")
	case !isString(t):
		ve.Add(JoinPath(path, "type"), mustBe("a string", t))
	default:
		switch t {
		case TypeText:
			requireString(obj, path, "text", ve)
		case TypeImage, TypeAudio:
			requireBase64(obj, path, "data", ve)
			requireString(obj, path, "mimeType", ve)
		case TypeResourceLink:
			requireURI(obj, path, "uri", ve)
			requireString(obj, path, "name", ve)
			optionalString(obj, path, "title", ve)
			optionalString(obj, path, "description", ve)
			optionalString(obj, path, "mimeType", ve)
			if v, ok := obj["size"]; ok {
				if f, ok := number(v); !ok || !(f >= 0) {
					ve.Add(JoinPath(path, "size"), "must be a non-negative number")
				}
			}
			if v, ok := obj["icons"]; ok {
				validateIcons(v, JoinPath(path, "icons"), ve)
			}
		case TypeResource:
			if v, ok := obj["resource"]; !ok {
				ve.Add(JoinPath(path, "resource"), "is required")
			} else {
				validateResource(v, JoinPath(path, "resource"), ve)
			}
		default:
			ve.Add(JoinPath(path, "type"), fmt.Sprintf("unknown block type %q (want text, image, audio, resource_link or resource)", t))
		}
	}
	if v, ok := obj["annotations"]; ok {
		validateAnnotations(v, JoinPath(path, "annotations"), ve)
	}
	if v, ok := obj["_meta"]; ok {
		validateMetaObject(v, JoinPath(path, "_meta"), ve)
	}
}

// validateResource checks embedded resource contents. An "annotations" member
// here is not MCP's (annotations belong to the block) and is preserved as any
// other unknown field.
func validateResource(v any, path string, ve *ValidationError) {
	r, ok := v.(map[string]any)
	if !ok {
		ve.Add(path, mustBe("an object", v))
		return
	}
	requireURI(r, path, "uri", ve)
	optionalString(r, path, "mimeType", ve)
	_, hasText := r["text"]
	_, hasBlob := r["blob"]
	switch {
	case hasText && hasBlob:
		ve.Add(path, "must have exactly one of text and blob, not both")
	case hasText:
		requireString(r, path, "text", ve)
	case hasBlob:
		requireBase64(r, path, "blob", ve)
	default:
		ve.Add(path, "must have text or blob")
	}
	if m, ok := r["_meta"]; ok {
		validateMetaObject(m, JoinPath(path, "_meta"), ve)
	}
}

func validateAnnotations(v any, path string, ve *ValidationError) {
	a, ok := v.(map[string]any)
	if !ok {
		ve.Add(path, mustBe("an object", v))
		return
	}
	if aud, ok := a["audience"]; ok {
		p := JoinPath(path, "audience")
		if arr, ok := aud.([]any); !ok {
			ve.Add(p, mustBe("an array", aud))
		} else {
			for i, r := range arr {
				if r != string(RoleUser) && r != string(RoleAssistant) {
					ve.Add(JoinPath(p, "["+strconv.Itoa(i)+"]"), `must be "user" or "assistant"`)
				}
			}
		}
	}
	if pr, ok := a["priority"]; ok {
		if f, ok := number(pr); !ok || !(f >= 0 && f <= 1) {
			ve.Add(JoinPath(path, "priority"), "must be between 0 and 1")
		}
	}
	if lm, ok := a["lastModified"]; ok {
		if s, ok := lm.(string); !ok || !IsDateTime(s) {
			ve.Add(JoinPath(path, "lastModified"), "must be an RFC 3339 date-time with a time zone offset")
		}
	}
}

func validateIcons(v any, path string, ve *ValidationError) {
	arr, ok := v.([]any)
	if !ok {
		ve.Add(path, mustBe("an array", v))
		return
	}
	for i, e := range arr {
		p := JoinPath(path, "["+strconv.Itoa(i)+"]")
		ic, ok := e.(map[string]any)
		if !ok {
			ve.Add(p, mustBe("an object", e))
			continue
		}
		requireURI(ic, p, "src", ve)
		optionalString(ic, p, "mimeType", ve)
		if s, ok := ic["sizes"]; ok {
			if sizes, ok := s.([]any); !ok {
				ve.Add(JoinPath(p, "sizes"), mustBe("an array", s))
			} else {
				for j, sz := range sizes {
					if !isString(sz) {
						ve.Add(JoinPath(p, "sizes["+strconv.Itoa(j)+"]"), mustBe("a string", sz))
					}
				}
			}
		}
		if th, ok := ic["theme"]; ok && th != "light" && th != "dark" {
			ve.Add(JoinPath(p, "theme"), `must be "light" or "dark"`)
		}
	}
}

func validateMetaObject(v any, path string, ve *ValidationError) {
	m, ok := v.(map[string]any)
	if !ok {
		ve.Add(path, mustBe("an object", v))
		return
	}
	validateMetaKeys(m, path, ve)
}

func requireString(obj map[string]any, path, key string, ve *ValidationError) {
	v, ok := obj[key]
	switch {
	case !ok:
		ve.Add(JoinPath(path, key), "is required")
	case !isString(v):
		ve.Add(JoinPath(path, key), mustBe("a string", v))
	}
}

// requireURI checks a field MCP types as format "uri": an RFC 3986 URI with
// a scheme (entity:node/5 and https://example.com are; rel/path and "" are
// not), so what chatd echoes meets its own contract.
func requireURI(obj map[string]any, path, key string, ve *ValidationError) {
	v, ok := obj[key]
	switch {
	case !ok:
		ve.Add(JoinPath(path, key), "is required")
	case !isString(v):
		ve.Add(JoinPath(path, key), mustBe("a string", v))
	case !IsURI(v.(string)):
		ve.Add(JoinPath(path, key), "must be an RFC 3986 URI with a scheme (https://example.com/a, entity:node/5)")
	}
}

func optionalString(obj map[string]any, path, key string, ve *ValidationError) {
	if v, ok := obj[key]; ok && !isString(v) {
		ve.Add(JoinPath(path, key), mustBe("a string", v))
	}
}

func requireBase64(obj map[string]any, path, key string, ve *ValidationError) {
	v, ok := obj[key]
	if !ok {
		ve.Add(JoinPath(path, key), "is required")
		return
	}
	s, ok := v.(string)
	switch {
	case !ok:
		ve.Add(JoinPath(path, key), mustBe("a base64 string", v))
	case !isBase64(s):
		ve.Add(JoinPath(path, key), "not valid base64")
	}
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// number returns the value of a JSON number. Values that do not fit a
// float64 (1e400) are reported as not numbers.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

var base64Alphabet = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = true
	}
	return t
}()

// isBase64 reports whether s is standard base64 (RFC 4648 §4) with padding.
// It is stricter than base64.StdEncoding in one way, on purpose: line breaks,
// which that decoder skips, are rejected, since MCP data is one string. It
// checks without decoding, so large payloads cost no allocation.
func isBase64(s string) bool {
	n := len(s)
	if n%4 != 0 {
		return false
	}
	end := n
	if n > 0 && s[n-1] == '=' {
		end--
		if s[n-2] == '=' {
			end--
		}
	}
	for i := 0; i < end; i++ {
		if !base64Alphabet[s[i]] {
			return false
		}
	}
	return true
}

func mustBe(what string, got any) string {
	return "must be " + what + ", not " + kindOf(got)
}

// kindOf names the JSON type of a decoded value for error messages, with
// its article ("a number").
func kindOf(v any) string { return withArticle(KindOf(v)) }
