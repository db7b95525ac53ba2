package execclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// TestAccessTokenRotation: with the old and the new token listed, an
// executor on either is reached, one refused attempt at most, and a
// token neither executor knows is still refused.
func TestAccessTokenRotation(t *testing.T) {
	t.Parallel()
	executor := func(token string) (*httptest.Server, *[]string) {
		var mu sync.Mutex
		seen := &[]string{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := r.Header.Get(protocol.AccessTokenHeader)
			mu.Lock()
			*seen = append(*seen, got)
			mu.Unlock()
			rt := protocol.OK()
			if got != token {
				rt = protocol.Fail(protocol.MsgWrongToken)
			}
			_ = json.NewEncoder(w).Encode(rt)
		}))
		t.Cleanup(srv.Close)
		return srv, seen
	}
	oldEx, oldSeen := executor("old")
	newEx, newSeen := executor("new")
	tokens := []string{"new", "old"}
	c, err := execclient.New(execclient.Options{AccessTokens: func() []string { return tokens }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if rt := c.Beat(ctx, newEx.URL); rt.Code != protocol.SuccessCode || len(*newSeen) != 1 {
		t.Errorf("executor on the new token: %+v after %v", rt, *newSeen)
	}
	if rt := c.Beat(ctx, oldEx.URL); rt.Code != protocol.SuccessCode || len(*oldSeen) != 2 || (*oldSeen)[0] != "new" {
		t.Errorf("executor on the old token: %+v after %v, want the new token refused then the old accepted", rt, *oldSeen)
	}
	tokens = []string{"newer"}
	if rt := c.Beat(ctx, oldEx.URL); rt.Msg != protocol.MsgWrongToken {
		t.Errorf("after the rotation ended, the old executor answered %+v, want the wrong-token refusal", rt)
	}
}
