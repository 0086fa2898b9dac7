package elicit

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"

	"chatd/internal/blocks"
	"github.com/google/uuid"
)

// ModeURL is the mode of a URL-mode question: the user is sent to a page
// (a sign-in, a payment, a consent) and tells chatd when done. chatd asks
// one only on behalf of an MCP server; a processor's own request in URL mode
// is refused (DecodeRequest, ParseParams).
const ModeURL = "url"

// MaxURLLen caps a URL-mode question's URL, in bytes.
const MaxURLLen = 2048

// NewURLRequest checks a URL-mode question an MCP server sent —
// message, the page's url and the server's elicitationId (may be empty) —
// under l and returns a request with a fresh chatd ID. The URL must pass
// CheckURL. The error is a *blocks.ValidationError listing every violation.
func (l Limits) NewURLRequest(message, pageURL, elicitationID string) (*Request, error) {
	l = l.withDefaults()
	var c collector
	l.checkMessage(message, &c)
	checkURLField(pageURL, &c)
	l.checkElicitationID(elicitationID, &c)
	if err := c.err(); err != nil {
		return nil, err
	}
	id := uuid.NewString()
	return &Request{ID: id, Message: message, Mode: ModeURL, URL: pageURL, ElicitationID: elicitationID,
		Meta: map[string]any{blocks.MetaElicitationID: id}}, nil
}

// NewURLRequest is Limits.NewURLRequest under DefaultLimits.
func NewURLRequest(message, pageURL, elicitationID string) (*Request, error) {
	return DefaultLimits.NewURLRequest(message, pageURL, elicitationID)
}

// CheckURL reports why a URL-mode question may not send the user to
// pageURL, or nil: it must be an absolute https URL, or http to a loopback
// host (127.0.0.0/8, ::1, localhost); carry no credentials (userinfo); and
// be at most MaxURLLen bytes. Anything else — javascript:, data:, a
// password in the URL, a plain-http remote host — could run code in the
// page, leak what the user types, or be read on the way.
func CheckURL(pageURL string) error {
	if len(pageURL) > MaxURLLen {
		return fmt.Errorf("%d bytes exceed the limit of %d", len(pageURL), MaxURLLen)
	}
	if !utf8.ValidString(pageURL) || strings.ContainsAny(pageURL, " \t\r\n\\") {
		return fmt.Errorf("is not a URL a browser opens unchanged")
	}
	u, err := url.Parse(pageURL)
	if err != nil {
		return fmt.Errorf("is not a URL: %v", err)
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials (user information before the host)")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return fmt.Errorf("http is allowed only to a loopback host (127.0.0.0/8, ::1, localhost); use https")
		}
	default:
		return fmt.Errorf("must be an https URL (or http to a loopback host), got scheme %s", quote(u.Scheme))
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("must name a host")
	}
	if u.Opaque != "" {
		return fmt.Errorf("must be an absolute URL with a host")
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkURLField(pageURL string, c *collector) {
	if pageURL == "" {
		c.add("url", "is required")
		return
	}
	if err := CheckURL(pageURL); err != nil {
		c.add("url", err.Error())
	}
}

func (l Limits) checkElicitationID(id string, c *collector) {
	if n := utf8.RuneCountInString(id); n > l.MaxTextLen {
		c.add("elicitationId", fmt.Sprintf("%d characters exceed the limit of %d", n, l.MaxTextLen))
	}
}

// DecodeStored decodes a request as chatd stored it for a paused turn:
// anything DecodeRequest accepts, and also a URL-mode question chatd asked
// on behalf of an MCP server ({mode: "url", message, url, elicitationId?,
// _meta}), checked as NewURLRequest checks it.
func DecodeStored(data []byte) (*Request, error) {
	return DefaultLimits.DecodeStored(data)
}

// DecodeStored is the package's DecodeStored under l.
func (l Limits) DecodeStored(data []byte) (*Request, error) {
	l = l.withDefaults()
	var c collector
	members, ok := readRequestObject(data, &c)
	if !ok {
		return nil, c.err()
	}
	if !isURLMode(members) {
		return l.decode(data, false)
	}
	var message, pageURL, elicitationID string
	var f requestFields
	for _, m := range members {
		switch m.key {
		case "mode":
		case "message":
			message = l.stringMember(m, &c)
		case "url":
			pageURL = l.stringMember(m, &c)
		case "elicitationId":
			elicitationID = l.stringMember(m, &c)
		case "_meta":
			f.metaSeen = true
			v, err := decodeAny(m.val)
			mm, ok := v.(map[string]any)
			if err != nil || !ok {
				c.add("_meta", "must be a JSON object, got "+blocks.KindOf(m.val))
				continue
			}
			f.meta = mm
		default:
			c.add(m.key, "unknown field of a URL-mode elicitation request")
		}
	}
	l.checkMessage(message, &c)
	checkURLField(pageURL, &c)
	l.checkElicitationID(elicitationID, &c)
	id := f.readMeta(nil, &c)
	if _, ok := f.meta[blocks.MetaWidgets]; ok {
		c.add(fmt.Sprintf("_meta[%q]", blocks.MetaWidgets), "a URL-mode question has no fields to hint at")
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return &Request{ID: id, Message: message, Mode: ModeURL, URL: pageURL, ElicitationID: elicitationID, Meta: f.meta}, nil
}

func isURLMode(members []member) bool {
	for _, m := range members {
		if m.key == "mode" {
			s, ok := decodeString(m.val)
			return ok && s == ModeURL
		}
	}
	return false
}

func (l Limits) stringMember(m member, c *collector) string {
	s, ok := decodeString(m.val)
	if !ok {
		c.add(m.key, "must be a string, got "+blocks.KindOf(m.val))
	}
	return s
}

// wireURLRequest is the URL-mode elicitation/create params.
type wireURLRequest struct {
	Mode          string         `json:"mode"`
	Message       string         `json:"message"`
	URL           string         `json:"url"`
	ElicitationID string         `json:"elicitationId,omitempty"`
	Meta          map[string]any `json:"_meta"`
}

func (r *Request) marshalURL(meta map[string]any) ([]byte, error) {
	return json.Marshal(wireURLRequest{Mode: ModeURL, Message: r.Message, URL: r.URL, ElicitationID: r.ElicitationID, Meta: meta})
}

// IsURL reports whether the request is a URL-mode question.
func (r *Request) IsURL() bool { return r.Mode == ModeURL }
