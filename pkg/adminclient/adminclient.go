// Package adminclient is the Go client of the xjob admin JSON API (the /v1
// routes listed in the doc comment of internal/web/adminapi and in
// docs/admin-api.md). The CLI is built on it, and so can any tool or test
// that manages jobs, groups and logs from Go.
//
// It speaks the root package's types (xjob.Job, xjob.Group, xjob.Log,
// xjob.ReportDay, xjob.MetricsSnapshot) and protocol.LogResult, so nothing the
// server sends is described twice. Every failed request the server answers
// comes back as a *APIError carrying the HTTP status, the message and the
// field problems; errors.Is maps 404 to xjob.ErrNotFound and 409 to
// xjob.ErrConflict, so callers can branch on meaning.
package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/text"
)

// maxReplyBytes bounds how much of a reply is read, so that a misbehaving
// server or proxy cannot make a client buffer without limit.
const maxReplyBytes = 64 << 20

// DefaultTimeout bounds one request when the caller brings no HTTP client:
// an admin call that takes longer than this is stuck, not slow.
const DefaultTimeout = 30 * time.Second

// Client calls one xjob admin API. It is safe for concurrent use.
type Client struct {
	base      string // scheme://host[/prefix], no trailing slash
	token     string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests through h (for custom
// transports, TLS settings or timeouts).
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) {
		if h != nil {
			c.http = h
		}
	}
}

// WithUserAgent sets the User-Agent header, so that server logs can tell
// tools apart.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// New returns a client of the admin API at baseURL (e.g.
// "http://127.0.0.1:8080", optionally with a path prefix when the API sits
// behind a proxy) that authenticates with the bearer token (empty sends no
// Authorization header).
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("admin client: server address: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("admin client: server address %q is not an http(s) URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("admin client: server address %q must not have a query or fragment", baseURL)
	}
	c := &Client{
		base:      strings.TrimRight(u.String(), "/"),
		token:     token,
		http:      &http.Client{Timeout: DefaultTimeout},
		userAgent: "xjob-adminclient",
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// BaseURL returns the server address the client calls, for messages.
func (c *Client) BaseURL() string { return c.base }

// APIError is a request the server answered with an error status. Problems
// lists the invalid fields of a rejected body (400 validation errors only).
type APIError struct {
	Status   int
	Message  string
	Problems []xjob.FieldProblem
}

// Error reads like "400 Bad Request: invalid input (jobDesc: is required)".
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(e.Status))
	if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	if h := e.Headline(); h != "" {
		b.WriteString(": " + h)
	}
	if len(e.Problems) > 0 {
		b.WriteString(" (")
		for i, p := range e.Problems {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(p.Field + ": " + p.Message)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Headline is the message without the field problems the server may have
// spelt into it too ("invalid input: jobDesc: is required" → "invalid
// input"), for showing above a list of Problems.
func (e *APIError) Headline() string {
	if len(e.Problems) == 0 {
		return e.Message
	}
	p := e.Problems[0]
	if i := strings.Index(e.Message, p.Field+": "+p.Message); i > 0 {
		if h := strings.TrimRight(e.Message[:i], " :;,-"); h != "" {
			return h
		}
	}
	return e.Message
}

// Is lets errors.Is(err, xjob.ErrNotFound) and errors.Is(err,
// xjob.ErrConflict) work on replies, so callers need not compare statuses.
func (e *APIError) Is(target error) bool {
	switch target {
	case xjob.ErrNotFound:
		return e.Status == http.StatusNotFound
	case xjob.ErrConflict:
		return e.Status == http.StatusConflict
	}
	return false
}

// errorBody is the JSON error reply of the admin API.
type errorBody struct {
	Error    string              `json:"error"`
	Problems []xjob.FieldProblem `json:"problems"`
}

// do sends one request and decodes a 2xx reply into out (when out is not
// nil). query may be nil; in is marshalled as JSON when not nil.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		buf, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode body: %w", method, path, err)
		}
		body = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// A *url.Error already names the method and URL.
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return fmt.Errorf("%s %s: read reply: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp.StatusCode, data)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode reply: %w", method, path, err)
	}
	return nil
}

// decodeError turns an error reply into an *APIError. A body that is not
// the API's JSON (a proxy's HTML page, plain text) becomes the message, cut
// short, so that the person still sees what answered.
func decodeError(status int, data []byte) *APIError {
	e := &APIError{Status: status}
	var eb errorBody
	if err := json.Unmarshal(data, &eb); err == nil && (eb.Error != "" || len(eb.Problems) > 0) {
		e.Message, e.Problems = eb.Error, eb.Problems
		return e
	}
	e.Message = text.Truncate(strings.Join(strings.Fields(string(data)), " "), 200)
	return e
}

func idPath(prefix string, id int64, suffix string) string {
	return prefix + "/" + strconv.FormatInt(id, 10) + suffix
}

func setInt(q url.Values, key string, v int64) {
	if v != 0 {
		q.Set(key, strconv.FormatInt(v, 10))
	}
}

func setString(q url.Values, key, v string) {
	if v != "" {
		q.Set(key, v)
	}
}

// errors.Is support is part of the contract of APIError.
var _ interface{ Is(error) bool } = (*APIError)(nil)

// AsAPIError returns the *APIError in err's chain, if any.
func AsAPIError(err error) (*APIError, bool) {
	var e *APIError
	ok := errors.As(err, &e)
	return e, ok
}
