package recallapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// Resolver looks up a host's addresses (*net.Resolver implements it). The
// webhook policy resolves names itself, so that the address it checks is
// the address it dials.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// nonPublic lists ranges a webhook may not reach unless
// webhooks.allow_private is set, beyond what netip classifies itself
// (loopback, private, link-local, multicast, unspecified).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	netip.MustParsePrefix("2001:10::/28"),    // ORCHID
	netip.MustParsePrefix("2001::/32"),       // Teredo: carries an IPv4 address
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
}

// privateReason says why addr is not a public address a webhook may reach,
// or "" when it is one. IPv4 addresses embedded in IPv6 (mapped, NAT64,
// 6to4) are judged by the IPv4 address.
func privateReason(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	if addr.Is6() {
		b := addr.As16()
		switch {
		case netip.MustParsePrefix("64:ff9b::/96").Contains(addr):
			addr = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case netip.MustParsePrefix("2002::/16").Contains(addr):
			addr = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		}
	}
	switch {
	case addr.IsLoopback():
		return "a loopback address"
	case addr.IsPrivate():
		return "a private address"
	case addr.IsLinkLocalUnicast():
		return "a link-local address (cloud metadata services live here)"
	case addr.IsUnspecified():
		return "the unspecified address"
	case addr.IsMulticast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return "a reserved, non-public address (" + p.String() + ")"
		}
	}
	return ""
}

// errPrivateTarget is a webhook address refused by the policy.
type errPrivateTarget struct {
	host string
	addr netip.Addr
	why  string
}

func (e *errPrivateTarget) Error() string {
	if e.host == e.addr.String() {
		return fmt.Sprintf("%s is %s; webhooks.allow_private is false", e.host, e.why)
	}
	return fmt.Sprintf("%s resolves to %s, %s; webhooks.allow_private is false", e.host, e.addr, e.why)
}

// resolvePublic returns host's addresses, or an error when it does not
// resolve or any address is not public: a name with one private address
// could be made to dial it.
func (s *Server) resolvePublic(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if why := privateReason(a); why != "" {
			return nil, &errPrivateTarget{host: host, addr: a, why: why}
		}
		return []netip.Addr{a}, nil
	}
	addrs, err := s.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("%s does not resolve: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s does not resolve", host)
	}
	for _, a := range addrs {
		if why := privateReason(a); why != "" {
			return nil, &errPrivateTarget{host: host, addr: a.Unmap(), why: why}
		}
	}
	return addrs, nil
}

func (s *Server) resolver() Resolver {
	if s.d.Resolver != nil {
		return s.d.Resolver
	}
	return net.DefaultResolver
}

// checkWebhookURL applies the address policy to a webhook URL being
// created or changed: a 400 naming url when it targets an address the
// policy refuses.
func (s *Server) checkWebhookURL(ctx context.Context, raw string) error {
	if s.cfg.AllowPrivateWebhooks {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return badRequest("url", "url must be an absolute http or https URL")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.resolvePublic(ctx, u.Hostname()); err != nil {
		return badRequest("url", "url: "+err.Error())
	}
	return nil
}

// webhookAddrs resolves a delivery's host to the addresses to dial: all of
// them when webhooks.allow_private is set, else only if every one is
// public.
func (s *Server) webhookAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	if !s.cfg.AllowPrivateWebhooks {
		addrs, err := s.resolvePublic(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("refused by the webhook address policy: %w", err)
		}
		return addrs, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	return s.resolver().LookupNetIP(ctx, "ip", host)
}

// webhookClient is the sender's HTTP client: redirects are not followed
// (a receiver answers, it does not send the body elsewhere), no proxy from
// the environment is used, and unless webhooks.allow_private is set every
// connection goes only to an address the policy allows, checked after the
// name is resolved at delivery time, so a DNS answer changed since the
// webhook was created cannot point it inside.
func (s *Server) webhookClient() *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	tr.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		addrs, err := s.webhookAddrs(ctx, host)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, a := range addrs {
			c, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
