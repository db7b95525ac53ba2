package lambdaapp_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleFirstUserOnAWS walks the documented first sign-in on AWS
// through the registry function behind the (emulated) HTTP API: no user
// exists, the console sends visitors to its sign-in page; the operator
// creates "admin" with the admin token (POST /v1/users, what the README
// shows); that user signs in and reaches the dashboard; a second create of
// the same name is refused and a wrong password does not sign in.
func TestConsoleFirstUserOnAWS(t *testing.T) {
	t.Parallel()
	e := setupEnv(t)
	api := e.apiGateway()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(req *http.Request) (*http.Response, string) {
		t.Helper()
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}

	res, _ := do(must2(http.NewRequest("GET", api.URL+"/console/", nil)))
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/login") {
		t.Fatalf("GET /console/ without a session: %d %q, want 303 to the sign-in page", res.StatusCode, res.Header.Get("Location"))
	}

	adminCall(t, api.URL, "POST", "/v1/users", map[string]any{"username": "admin", "password": "first-admin-pw", "role": 1}, nil)
	dup := must2(http.NewRequest("POST", api.URL+"/v1/users", strings.NewReader(`{"username":"admin","password":"another-pw-1","role":1}`)))
	dup.Header.Set("Authorization", "Bearer "+adminToken)
	dup.Header.Set("Content-Type", "application/json")
	if res, body := do(dup); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "taken") {
		t.Fatalf("second POST /v1/users admin: %d %s, want 400 (taken)", res.StatusCode, body)
	}

	login := func(pw string) *http.Response {
		req := must2(http.NewRequest("POST", api.URL+"/console/login",
			strings.NewReader(url.Values{"username": {"admin"}, "password": {pw}, "next": {"/console/"}}.Encode())))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, _ := do(req)
		return res
	}
	if res := login("wrong-password"); res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Fatalf("wrong password: %d with %d cookies, want 401 and none", res.StatusCode, len(res.Cookies()))
	}
	res = login("first-admin-pw")
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) == 0 {
		t.Fatalf("sign-in: %d with %d cookies, want 303 and a session", res.StatusCode, len(res.Cookies()))
	}
	dash := must2(http.NewRequest("GET", api.URL+"/console/", nil))
	for _, c := range res.Cookies() {
		dash.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	if res, body := do(dash); res.StatusCode != http.StatusOK || !strings.Contains(body, "admin") {
		t.Fatalf("dashboard after sign-in: %d\n%.300s", res.StatusCode, body)
	}
}

func must2[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
