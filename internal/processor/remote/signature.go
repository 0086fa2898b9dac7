package remote

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Sign returns the Chatd-Signature header of a request body sent at now:
// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed by secret>.
// The time is inside the signed bytes so that a processor can refuse a
// replayed request by its age as well as a forged one by its MAC.
func Sign(secret []byte, now time.Time, body []byte) string {
	t := strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(t))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}
