package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"chatd/internal/ratelimit"
)

// Authenticator resolves the principal a request acts for.
type Authenticator interface {
	// Authenticate returns the request's principal, or an error when the
	// credentials are missing or wrong.
	Authenticate(r *http.Request) (string, error)
	// Challenge is the WWW-Authenticate value sent with a 401.
	Challenge() string
}

var errUnauthenticated = errorf(http.StatusUnauthorized, "unauthorized", "missing or invalid credentials: send Authorization: Bearer <api key>")

// AnonymousPrincipal is the one principal of auth mode none.
const AnonymousPrincipal = "anonymous"

// AnonymousAuth is auth mode none: every request is the anonymous principal.
type AnonymousAuth struct{}

// Authenticate implements Authenticator.
func (AnonymousAuth) Authenticate(*http.Request) (string, error) { return AnonymousPrincipal, nil }

// Challenge implements Authenticator.
func (AnonymousAuth) Challenge() string { return "" }

// APIKeyAuth is auth mode apikey: `Authorization: Bearer <key>`, each key
// belonging to one principal (a principal may have several).
type APIKeyAuth struct {
	keys []apiKey
}

// APIKey is one principal's key.
type APIKey struct {
	Principal string
	Key       string
}

type apiKey struct {
	principal string
	digest    [sha256.Size]byte
}

// NewAPIKeyAuth returns an authenticator for keys. It refuses an empty list,
// an empty key, and a key given to two principals.
func NewAPIKeyAuth(keys []APIKey) (*APIKeyAuth, error) {
	if len(keys) == 0 {
		return nil, errors.New("auth mode apikey needs at least one key")
	}
	a := &APIKeyAuth{}
	owner := map[[sha256.Size]byte]string{}
	for _, k := range keys {
		if err := validPrincipal(k.Principal); err != nil {
			return nil, fmt.Errorf("api key principal %q: %w", k.Principal, err)
		}
		if k.Key == "" {
			return nil, fmt.Errorf("api key for principal %s is empty", k.Principal)
		}
		digest := sha256.Sum256([]byte(k.Key))
		if prev, ok := owner[digest]; ok && prev != k.Principal {
			return nil, fmt.Errorf("the same api key is given to %s and %s", prev, k.Principal)
		}
		owner[digest] = k.Principal
		a.keys = append(a.keys, apiKey{principal: k.Principal, digest: digest})
	}
	return a, nil
}

// Authenticate implements Authenticator. Keys are compared as SHA-256 digests
// in constant time, and every key is compared, so timing reveals neither a
// key nor which principal's key was close.
func (a *APIKeyAuth) Authenticate(r *http.Request) (string, error) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		// Two credentials are refused rather than one of them picked:
		// which one a proxy on the way would have honoured is anyone's guess.
		return "", errUnauthenticated
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", errUnauthenticated
	}
	digest := sha256.Sum256([]byte(strings.TrimSpace(token)))
	principal := ""
	for _, k := range a.keys {
		if subtle.ConstantTimeCompare(digest[:], k.digest[:]) == 1 {
			principal = k.principal
		}
	}
	if principal == "" {
		return "", errUnauthenticated
	}
	return principal, nil
}

// Challenge implements Authenticator.
func (a *APIKeyAuth) Challenge() string { return `Bearer realm="chatd"` }

// HeaderAuth is auth mode header: a trusted gateway in front of chatd puts
// the authenticated principal in Header.
type HeaderAuth struct {
	Header string
}

// Authenticate implements Authenticator.
func (h HeaderAuth) Authenticate(r *http.Request) (string, error) {
	values := r.Header.Values(h.Header)
	if len(values) > 1 {
		// chatd never picks one: a client that could add a second header
		// beside the gateway's might otherwise choose its principal.
		return "", errorf(http.StatusUnauthorized, "unauthorized", "the %s header must be sent once", h.Header)
	}
	principal := ""
	if len(values) == 1 {
		principal = values[0]
	}
	if validPrincipal(principal) != nil {
		return "", errorf(http.StatusUnauthorized, "unauthorized", "missing or invalid %s header", h.Header)
	}
	return principal, nil
}

// Challenge implements Authenticator.
func (h HeaderAuth) Challenge() string { return "" }

// validPrincipal keeps principals printable and short: they are stored with
// every thread and appear in logs.
func validPrincipal(p string) error {
	if p == "" || len(p) > 256 {
		return errors.New("principal must be 1 to 256 bytes")
	}
	if !utf8.ValidString(p) {
		// Two different invalid byte strings would read (and log) as the
		// same principal.
		return errors.New("principal must be UTF-8")
	}
	for _, r := range p {
		if !unicode.IsPrint(r) || r == ' ' {
			return errors.New("principal must be printable without spaces")
		}
	}
	return nil
}

type principalKey struct{}

func withPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

func principalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// The rate limits' keys say what they count, so a principal named like an
// address ("127.0.0.1") and that address never share a counter: the two
// limiters may count on one store.
const (
	principalRateKey = "principal:"
	addressRateKey   = "address:"
)

// authenticate resolves the principal for /v1 routes and applies the rate
// limits: failed authentications per client address (an address past its
// limit is refused before its credentials are even checked, so keys cannot
// be guessed at speed), then requests per principal.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addrKey := addressRateKey + s.clientAddr(r)
		if s.authFailLimit.Enabled() {
			if d, blocked := s.authFailLimit.Blocked(addrKey); blocked {
				s.holdRefusal(r)
				s.writeError(w, r, rateLimited(w, d, "too many failed authentications from this address"))
				return
			}
		}
		principal, err := s.auth.Authenticate(r)
		if err != nil {
			if s.authFailLimit.Enabled() {
				d := s.authFailLimit.Allow(r.Context(), addrKey)
				setRateHeaders(w, d)
				if !d.Allowed {
					s.holdRefusal(r)
					err = rateLimited(w, d, "too many failed authentications from this address")
				}
			}
			s.writeError(w, r, err)
			return
		}
		if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
			info.principal = principal
		}
		if s.rateLimit.Enabled() {
			d := s.rateLimit.Allow(r.Context(), principalRateKey+principal)
			setRateHeaders(w, d)
			if !d.Allowed {
				s.holdRefusal(r)
				s.writeError(w, r, rateLimited(w, d, "too many requests; retry after the Retry-After seconds"))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(withPrincipal(r.Context(), principal)))
	})
}

// holdRefusal waits Config.RefusalDelay before a 429 is answered, or less if
// the client leaves; when MaxHeldRefusals already wait, it returns at once
// (held requests cost a goroutine each, so their number is bounded).
func (s *Server) holdRefusal(r *http.Request) {
	if s.cfg.RefusalDelay <= 0 {
		return
	}
	select {
	case s.heldRefusals <- struct{}{}:
		defer func() { <-s.heldRefusals }()
	default:
		return
	}
	t := time.NewTimer(s.cfg.RefusalDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// setRateHeaders tells the client where it stands (the IETF RateLimit
// header fields: the limit, what is left, seconds until the window resets).
func setRateHeaders(w http.ResponseWriter, d ratelimit.Decision) {
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(d.ResetSeconds()))
}

// rateLimited is the 429 for a refused decision, with Retry-After.
func rateLimited(w http.ResponseWriter, d ratelimit.Decision, detail string) error {
	setRateHeaders(w, d)
	w.Header().Set("Retry-After", strconv.Itoa(max(d.ResetSeconds(), 1)))
	return errorf(http.StatusTooManyRequests, "rate_limited", "%s", detail)
}
