package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := f[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	res := fakeResolver{
		"metadata.internal": {netip.MustParseAddr("169.254.169.254")},
		"exec.internal":     {netip.MustParseAddr("10.0.0.5")},
		"sneaky.example":    {netip.MustParseAddr("10.0.0.6"), netip.MustParseAddr("fe80::1")},
		"localhost":         {netip.MustParseAddr("127.0.0.1")},
		"nat64.example":     {netip.MustParseAddr("64:ff9b::a9fe:a9fe")}, // DNS64 of a metadata name
	}
	opsAllow, _ := ParsePrefixes("169.254.10.0/24")
	opsDeny, _ := ParsePrefixes("10.9.0.0/16, 192.168.1.7")
	aws := Policy{}
	local := Policy{AllowLoopback: true}
	ops := Policy{Allow: opsAllow, Deny: opsDeny}
	tests := []struct {
		p    Policy
		addr string
		ok   bool
	}{
		{aws, "http://10.0.0.5:9999/", true},
		{aws, "http://172.16.3.4:9999/", true},
		{aws, "http://192.168.1.7:9999/", true},
		{aws, "http://exec.internal:9999/", true},
		{aws, "http://unresolvable.example:9999/", true},
		{aws, "http://169.254.169.254/latest/meta-data", false},
		{aws, "http://[fd00:ec2::254]/", false},
		{aws, "http://[fe80::1%25eth0]:9999/", false},
		{aws, "http://[::ffff:169.254.169.254]/", false},
		{aws, "http://2852039166/", false},          // 169.254.169.254 as one number
		{aws, "http://0xa9.0xfe.0xa9.0xfe/", false}, // in hex
		{aws, "http://0251.0376.0251.0376/", false}, // in octal
		{aws, "http://169.254.43518/", false},
		{aws, "http://metadata.internal/", false},
		{aws, "http://sneaky.example/", false},
		{aws, "http://0.0.0.0:9999/", false},
		{aws, "http://127.0.0.1:9999/", false},
		{aws, "http://[::1]:9999/", false},
		{aws, "http://localhost:9999/", false},
		{aws, "http://127.1:9999/", false},
		{local, "http://127.0.0.1:9999/", true},
		{local, "http://localhost:9999/", true},
		{local, "http://169.254.169.254/", false},
		{ops, "http://169.254.10.3/", true},
		{ops, "http://169.254.11.3/", false},
		{ops, "http://10.9.1.1/", false},
		{ops, "http://192.168.1.7/", false},
		{ops, "http://192.168.1.8/", true},
		// Metadata and host services outside link-local.
		{aws, "http://100.100.100.200/latest/meta-data/", false}, // Alibaba Cloud
		{aws, "http://100.100.100.201:9999/", true},              // the rest of 100.64.0.0/10 stays usable
		{aws, "http://192.0.0.192/", false},                      // Oracle Cloud
		{aws, "http://168.63.129.16/", false},                    // Azure WireServer
		{aws, "http://[fd00:ec2::253]/", false},                  // AWS DNS over IPv6
		{aws, "http://[fd20:ce::254]/", false},                   // Google Cloud over IPv6
		{aws, "http://[fd00:ec3::254]:9999/", true},
		// IPv6 spellings that lead to a refused IPv4 address.
		{aws, "http://[64:ff9b::a9fe:a9fe]/", false},   // NAT64 of 169.254.169.254
		{aws, "http://[64:ff9b::6464:64c8]/", false},   // NAT64 of 100.100.100.200
		{aws, "http://[64:ff9b:1::a9fe:a9fe]/", false}, // local-use NAT64
		{aws, "http://[64:ff9b::7f00:1]:9999/", false}, // NAT64 of loopback
		{local, "http://[64:ff9b::7f00:1]:9999/", true},
		{aws, "http://[64:ff9b::a00:5]:9999/", true}, // NAT64 of 10.0.0.5
		{aws, "http://[2002:a9fe:a9fe::1]/", false},  // 6to4
		{aws, "http://[::a9fe:a9fe]/", false},        // IPv4-compatible
		{ops, "http://[64:ff9b::a09:101]/", false},   // NAT64 of the denied 10.9.1.1
		{ops, "http://[64:ff9b::a9fe:a03]/", true},   // NAT64 of the allowed 169.254.10.3
		{aws, "http://nat64.example/", false},
	}
	for _, tt := range tests {
		err := tt.p.Check(context.Background(), res, tt.addr)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrDenied)) {
			t.Errorf("%+v Check(%s) = %v, want ok=%v", tt.p, tt.addr, err, tt.ok)
		}
	}
}

// The dialer checks the address it actually connects to.
func TestDialerControl(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := (Policy{}).Dialer(time.Second).Dial("tcp", net.JoinHostPort(host, port)); !errors.Is(err, ErrDenied) {
			t.Errorf("dial %s with loopback refused: %v", host, err)
		}
	}
	c, err := (Policy{AllowLoopback: true}).Dialer(time.Second).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial with loopback allowed: %v", err)
	}
	c.Close()
}

func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	got, err := ParsePrefixes(" 10.0.0.0/8,fd00::/8 , 1.2.3.4,")
	if err != nil || len(got) != 3 || got[2].String() != "1.2.3.4/32" {
		t.Fatalf("ParsePrefixes: %v %v", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "nonsense", "10.0.0/8"} {
		if _, err := ParsePrefixes(bad); err == nil {
			t.Errorf("ParsePrefixes(%q) accepted", bad)
		}
	}
}

func FuzzLegacyIPv4(f *testing.F) {
	for _, s := range []string{"2852039166", "0xa9.0xfe.0xa9.0xfe", "127.1", "1.2.3.4", "09", "0x", "1.2.3.4.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ip := legacyIPv4(s)
		if std, err := netip.ParseAddr(s); err == nil && std.Is4() && ip != std {
			t.Fatalf("legacyIPv4(%q) = %v, netip says %v", s, ip, std)
		}
	})
}
