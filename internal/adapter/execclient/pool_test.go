package execclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A /run body goes back to the pool only when the direct path alone had
// it: net/http's transport may still be writing a body after Do returned,
// so a call it carried (https here, which the direct path leaves to it)
// must not have its body reused.
func TestBodyReusedOnlyAfterTheDirectPath(t *testing.T) {
	t.Parallel()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"code":200}`)
	})
	plain := httptest.NewServer(handler)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(handler)
	t.Cleanup(tlsSrv.Close)
	for _, tc := range []struct {
		name   string
		direct bool
		url    string
		reuse  bool
	}{
		{"direct, http", true, plain.URL, true},
		{"direct, https (net/http)", true, tlsSrv.URL, false},
		{"net/http, http", false, plain.URL, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(Options{Direct: tc.direct, InsecureSkipVerify: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			r, _, reuse := c.post(context.Background(), tc.url, "run", []byte(`{"jobId":1}`), 1<<10)
			if r.Code != 200 {
				t.Fatalf("post: %d %s", r.Code, r.Msg)
			}
			if reuse != tc.reuse {
				t.Fatalf("reuse = %v, want %v", reuse, tc.reuse)
			}
		})
	}
}
