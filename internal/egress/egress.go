// Package egress decides which IP addresses the scheduler may connect to
// when it calls an executor. Anyone holding the executor access token can
// register an address, and an admin can type one into a group, so without
// a rule the scheduler would POST to whatever they name: the cloud's
// metadata service (169.254.169.254, fd00:ec2::254), link-local services,
// or the scheduler's own loopback.
//
// The rule is checked twice: on the address as registered (Check, with
// names resolved), and on the IP actually dialled (Control, for
// net.Dialer.Control), so a name that resolves elsewhere at dispatch time
// — DNS rebinding — is caught where it matters.
//
// Order of the rule, first match wins:
//
//	operator Deny ranges            → refused
//	operator Allow ranges           → allowed (an explicit opt-in overrides what follows)
//	an IPv6 address that carries an IPv4 one (NAT64 64:ff9b::/96 and
//	  64:ff9b:1::/48, 6to4 2002::/16, IPv4-compatible ::/96) → the rule
//	  applied to the IPv4 address, so 64:ff9b::a9fe:a9fe is 169.254.169.254
//	link-local, cloud metadata and host services, unspecified, multicast,
//	  broadcast → refused
//	loopback                        → allowed only with AllowLoopback (xjob local)
//	everything else (private ranges included: executors live there) → allowed
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Policy is one installation's rule. The zero value refuses loopback and
// the built-in ranges and allows the rest.
type Policy struct {
	// AllowLoopback allows 127.0.0.0/8 and ::1: xjob local, where the
	// executors run on the same machine.
	AllowLoopback bool
	// Allow and Deny are the operator's ranges (see the package doc for
	// their order).
	Allow, Deny []netip.Prefix
}

// builtinDenied are refused unless an operator allows them explicitly.
var builtinDenied = []struct {
	prefix netip.Prefix
	why    string
}{
	// AWS, Google Cloud, Azure, Oracle, DigitalOcean, Tencent Cloud (169.254.0.23)…
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	// AWS Nitro's instance services over IPv6: metadata ::254, DNS ::253,
	// time ::123.
	{netip.MustParsePrefix("fd00:ec2::/32"), "cloud metadata (AWS instance services)"},
	{netip.MustParsePrefix("fd20:ce::254/128"), "cloud metadata (Google Cloud, IPv6)"},
	// Outside link-local: Alibaba Cloud's metadata service sits in the
	// shared address space (100.64.0.0/10, where executors on a carrier
	// or Tailscale network may live, so only the one address), Oracle
	// Cloud's legacy one in 192.0.0.0/24, Azure's host agent (WireServer)
	// at a public address.
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata (Alibaba Cloud)"},
	{netip.MustParsePrefix("192.0.0.192/32"), "cloud metadata (Oracle Cloud)"},
	{netip.MustParsePrefix("168.63.129.16/32"), "cloud host service (Azure WireServer)"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
}

// ErrDenied is the class of every refusal.
var ErrDenied = errors.New("executor address not allowed")

// CheckIP reports whether ip may be connected to.
func (p Policy) CheckIP(ip netip.Addr) error {
	// ::ffff:169.254.169.254 is 169.254.169.254, and a zone (fe80::1%eth0)
	// would make every range miss.
	ip = ip.Unmap().WithZone("")
	for _, d := range p.Deny {
		if d.Contains(ip) {
			return fmt.Errorf("%w: %s is in denied range %s", ErrDenied, ip, d)
		}
	}
	for _, a := range p.Allow {
		if a.Contains(ip) {
			return nil
		}
	}
	if v4, how := embeddedIPv4(ip); v4.IsValid() {
		if err := p.CheckIP(v4); err != nil {
			return fmt.Errorf("%w: %s is %s of %s (%v)", ErrDenied, ip, how, v4, err)
		}
	}
	for _, b := range builtinDenied {
		if b.prefix.Contains(ip) {
			return fmt.Errorf("%w: %s is %s", ErrDenied, ip, b.why)
		}
	}
	if ip.IsLoopback() && !p.AllowLoopback {
		return fmt.Errorf("%w: %s is loopback", ErrDenied, ip)
	}
	return nil
}

// Prefixes of IPv6 addresses that carry an IPv4 address a gateway or the
// stack itself connects to.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052, well-known
	nat64User = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215, local use (a /96 inside it)
	sixToFour = netip.MustParsePrefix("2002::/16")      // RFC 3056: 2002:V4ADDR::/48
	v4Compat  = netip.MustParsePrefix("::/96")          // deprecated IPv4-compatible (:: and ::1 aside)
)

// embeddedIPv4 is the IPv4 address ip (IPv6, unmapped) leads to, and how;
// the zero Addr when it carries none.
func embeddedIPv4(ip netip.Addr) (netip.Addr, string) {
	if !ip.Is6() {
		return netip.Addr{}, ""
	}
	b := ip.As16()
	last := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	switch {
	case nat64.Contains(ip), nat64User.Contains(ip):
		return last, "NAT64"
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4"
	case v4Compat.Contains(ip) && ip != netip.IPv6Unspecified() && ip != netip.IPv6Loopback():
		return last, "IPv4-compatible"
	}
	return netip.Addr{}, ""
}

// Control is a net.Dialer Control function: it refuses the connection
// before it is made when the address being dialled is not allowed.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read dialled address %q", ErrDenied, address)
	}
	return p.CheckIP(ap.Addr())
}

// Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// lookupTimeout bounds a registration's name lookup.
const lookupTimeout = 2 * time.Second

// Check reports whether the executor address (an http(s) URL) may be
// called: an IP literal is checked as it is, a name is resolved with r and
// every address it resolves to must be allowed. A name that does not
// resolve is allowed here (it may resolve later; the dial is checked
// again).
func (p Policy) Check(ctx context.Context, r Resolver, address string) error {
	u, err := url.Parse(address)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("%w: %q has no host", ErrDenied, address)
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		return p.CheckIP(ip)
	}
	if ip := legacyIPv4(host); ip.IsValid() {
		return p.CheckIP(ip)
	}
	if r == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, ip := range ips {
		if err := p.CheckIP(ip); err != nil {
			return fmt.Errorf("%s resolves to a refused address: %w", host, err)
		}
	}
	return nil
}

// legacyIPv4 reads the spellings of an IPv4 address that inet_aton (and
// so some resolvers and HTTP clients) accept but netip does not: one to
// four parts, each decimal, octal (0…) or hex (0x…), e.g. 2852039166 or
// 0xa9.0xfe.0xa9.0xfe for 169.254.169.254. Zero Addr when host is not one.
func legacyIPv4(host string) netip.Addr {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}
	}
	vals := make([]uint64, len(parts))
	for i, s := range parts {
		base := 10
		switch {
		case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
			base, s = 16, s[2:]
		case len(s) > 1 && s[0] == '0':
			base, s = 8, s[1:]
		}
		if s == "" {
			return netip.Addr{}
		}
		var v uint64
		for _, c := range strings.ToLower(s) {
			d := strings.IndexRune("0123456789abcdef"[:base], c)
			if d < 0 {
				return netip.Addr{}
			}
			v = v*uint64(base) + uint64(d)
			if v > 0xffffffff {
				return netip.Addr{}
			}
		}
		vals[i] = v
	}
	var n uint64
	last := len(vals) - 1
	for i, v := range vals[:last] {
		if v > 0xff {
			return netip.Addr{}
		}
		n |= v << (8 * (3 - i))
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// ParsePrefixes reads a comma-separated list of CIDR ranges (a single IP
// is its own /32 or /128).
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			ip, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not an IP address or CIDR range", f)
			}
			out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		pf, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR range", f)
		}
		out = append(out, pf.Masked())
	}
	return out, nil
}

// Dialer returns a dialer whose connections obey p.
func (p Policy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.Control}
}

// AddressKey is the form in which two addresses of one executor compare
// equal: the client appends "/" before the path, so a trailing slash
// makes no difference.
func AddressKey(a string) string { return strings.TrimRight(strings.TrimSpace(a), "/") }
