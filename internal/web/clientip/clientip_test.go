package clientip

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestOf(t *testing.T) {
	t.Parallel()
	proxies := New([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/24"), netip.MustParsePrefix("fd00::/64")})
	tests := []struct {
		name   string
		res    Resolver
		remote string
		xff    []string
		want   string
	}{
		{"no proxies: the peer, whatever the header says", New(nil), "203.0.113.5:4000", []string{"198.51.100.1"}, "203.0.113.5"},
		{"untrusted peer: the peer", proxies, "203.0.113.5:4000", []string{"198.51.100.1"}, "203.0.113.5"},
		{"trusted peer: the address it forwarded", proxies, "10.0.0.2:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"forged left entries are skipped", proxies, "10.0.0.2:4000", []string{"1.1.1.1, 198.51.100.1"}, "198.51.100.1"},
		{"a chain of trusted proxies", proxies, "10.0.0.2:4000", []string{"198.51.100.1, 10.0.0.7", "10.0.0.9"}, "198.51.100.1"},
		{"every entry trusted: the leftmost", proxies, "10.0.0.2:4000", []string{"10.0.0.3, 10.0.0.4"}, "10.0.0.3"},
		{"trusted peer without the header: the peer", proxies, "10.0.0.2:4000", nil, "10.0.0.2"},
		{"garbage stops the walk", proxies, "10.0.0.2:4000", []string{"198.51.100.1, nonsense"}, "10.0.0.2"},
		{"ports and brackets", proxies, "[fd00::1]:4000", []string{"[2001:db8::5]:443"}, "2001:db8::5"},
		{"ipv4 with a port", proxies, "10.0.0.2:4000", []string{"198.51.100.1:5678"}, "198.51.100.1"},
		{"mapped peer", proxies, "[::ffff:10.0.0.2]:4000", []string{"198.51.100.1"}, "198.51.100.1"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		for _, v := range tt.xff {
			r.Header.Add(Header, v)
		}
		if got := tt.res.Of(r); got != tt.want {
			t.Errorf("%s: Of = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestWrap(t *testing.T) {
	t.Parallel()
	var got string
	h := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}).Wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = FromRequest(r)
	}))
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set(Header, "192.0.2.7")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if got != "192.0.2.7" {
		t.Fatalf("FromRequest = %q", got)
	}
	r = httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.9:1"
	if got := FromRequest(r); got != "192.0.2.9" {
		t.Fatalf("FromRequest without Wrap = %q", got)
	}
}

// FuzzXForwardedFor: any header gives an address that is the peer or
// one the header names, never a panic.
func FuzzXForwardedFor(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "1.1.1.1, 10.0.0.3", "[::1]:80, nonsense", ",,,", "10.0.0.1,10.0.0.2,10.0.0.3"} {
		f.Add(s)
	}
	res := New([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	f.Fuzz(func(t *testing.T, xff string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.9.9.9:1"
		r.Header.Set(Header, xff)
		got := res.Of(r)
		if _, err := netip.ParseAddr(got); err != nil {
			t.Fatalf("Of(%q) = %q, not an address", xff, got)
		}
	})
}
