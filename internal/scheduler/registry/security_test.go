package registry

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/egress"
)

// Registration refuses internal addresses under the egress policy, app
// names that are not printable ASCII, and new app names past the cap.
func TestRegisterRefusals(t *testing.T) {
	t.Parallel()
	policy := egress.Policy{}
	e := setup(t, Config{MaxAppNames: 3, CheckAddress: func(ctx context.Context, a string) error {
		return policy.Check(ctx, net.DefaultResolver, a)
	}})
	tests := []struct {
		app, addr string
		ok        bool
	}{
		{"app-one", "http://10.0.0.5:9999/", true},
		{"app-one", "http://169.254.169.254/latest/meta-data", false},
		{"app-one", "http://[fd00:ec2::254]/", false},
		{"app-one", "http://[fe80::1]:9999/", false},
		{"app-one", "http://127.0.0.1:9999/", false},
		{"app-one", "http://2852039166/", false},
		{"app\x00nul", "http://10.0.0.6:9999/", false},
		{"app\xffbad", "http://10.0.0.6:9999/", false},
		{"app<b>", "http://10.0.0.6:9999/", false},
		{strings.Repeat("a", 65), "http://10.0.0.6:9999/", false},
		{"app-two", "http://10.0.0.6:9999/", true},
		{"app-three", "http://10.0.0.7:9999/", true},
		{"app-four", "http://10.0.0.8:9999/", false}, // a fourth app name
		{"app-one", "http://10.0.0.9:9999/", true},   // an existing one takes more
	}
	for _, tt := range tests {
		err := e.svc.Register(e.ctx, registryParam("EXECUTOR", tt.app, tt.addr))
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrIllegalArgument)) {
			t.Errorf("Register(%q, %s) = %v, want ok=%v", tt.app, tt.addr, err, tt.ok)
		}
	}
}
