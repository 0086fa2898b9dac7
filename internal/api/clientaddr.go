package api

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address failed authentications are counted against:
// the client's IP, an IPv6 client's /64 (one host's usual allocation).
//
// The client is the connection's peer unless the peer is one of
// Config.TrustedProxies: then X-Forwarded-For is read from its right end,
// each trusted proxy appending the address it received the request from,
// and the client is the first address there that is not a trusted proxy.
// Entries to the left of that one are whatever the client chose to send,
// so they are never read. An entry that is not an IP address ends the walk
// at the last trusted hop, the address then counted against.
func (s *Server) clientAddr(r *http.Request) string {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	client := peer
	if s.trusted(peer) {
		client = s.forwardedClient(r.Header.Values("X-Forwarded-For"), peer)
	}
	if client.Is4() {
		return client.String()
	}
	return netip.PrefixFrom(client, 64).Masked().Addr().String()
}

// forwardedClient walks the X-Forwarded-For values (one header or several,
// each a comma-separated list) from the right, from a trusted peer.
func (s *Server) forwardedClient(values []string, peer netip.Addr) netip.Addr {
	hop := peer
	for i := len(values) - 1; i >= 0; i-- {
		entries := strings.Split(values[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			addr, err := netip.ParseAddr(strings.TrimSpace(entries[j]))
			if err != nil {
				return hop
			}
			addr = addr.Unmap().WithZone("")
			if !s.trusted(addr) {
				return addr
			}
			hop = addr
		}
	}
	return hop
}

func (s *Server) trusted(addr netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// parseAddr reads the IP of a "host:port" peer address (or a bare host).
func parseAddr(remote string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	// A link-local peer's zone names this host's interface, not the peer.
	return addr.Unmap().WithZone(""), true
}
