// Package target describes jobs that need no executor: an HTTP endpoint
// the scheduler calls itself. A target job is an ordinary job of glue type
// HTTP whose GLUE source holds a Spec (this package's JSON): xxl-job's
// retries, timeouts, logs, alarms, child jobs and misfire strategies apply
// to it as to any job, and only the last step — who makes the call — is
// different (the built-in executor, internal/adapter/httptarget, instead
// of an executor process).
//
// This package is pure: it parses and checks a spec, renders its small
// templates, and seals its secret headers (Sealer). It makes no call.
//
// A secret header's value lives in three forms:
//
//	plaintext  ── save (Sealer.Seal) ──▶ "enc:v1:…" (at rest, in the job's GLUE source)
//	"enc:v1:…" ── shown (Redact) ──────▶ "ref:…"    (console, /v1, export: never the value)
//	"ref:…"    ── saved again (Resolve) ▶ the stored "enc:v1:…" it names, or refused
//
// so a job read and written back unchanged keeps its secret, and a
// reference copied to another job or installation is refused rather than
// decrypted there.
package target

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob/internal/strictjson"
)

// Address is the executor address recorded in the logs of target jobs:
// not a URL, so no executor can register it and no group can list it.
const Address = "xjob:http-target"

// Limits of a spec.
const (
	MaxURLLen         = 2048
	MaxHeaders        = 32
	MaxHeaderValueLen = 8 << 10
	MaxBodyLen        = 64 << 10
	MaxSuccessCodes   = 128
	// MaxTimeoutSeconds bounds an HTTP job's executorTimeout: a call
	// outlives neither a worker nor the lost-result check (10 minutes).
	MaxTimeoutSeconds = 300
	// DefaultTimeoutSeconds applies when the job's executorTimeout is 0:
	// an HTTP call is never left unbounded.
	DefaultTimeoutSeconds = 60
	// DefaultSuccessCodes are the status codes that count as success
	// when the spec names none.
	DefaultSuccessCodes = "200-299"
)

// Methods a spec may use.
var Methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Spec is what an HTTP job calls, as its GLUE source holds it (JSON).
type Spec struct {
	// Method is the HTTP method (default GET).
	Method string `json:"method,omitempty"`
	// URL is an http or https URL; its path and query may hold
	// placeholders (URL-encoded), its scheme and host may not.
	URL string `json:"url"`
	// Headers are sent as given; values may hold placeholders.
	Headers map[string]string `json:"headers,omitempty"`
	// SecretHeaders are sent like Headers but kept encrypted at rest and
	// never shown back: see the package doc.
	SecretHeaders map[string]string `json:"secretHeaders,omitempty"`
	// Body is a template sent as the request body (not with GET or HEAD).
	Body string `json:"body,omitempty"`
	// SuccessCodes lists the status codes that count as success: codes
	// and ranges, comma-separated ("200-299", "200,202,204").
	SuccessCodes string `json:"successCodes,omitempty"`
}

// Problem is one invalid field of a spec; Field is its JSON name
// ("url", "headers.X-Token").
type Problem struct {
	Field, Message string
}

// Problems is every problem of a spec; it is an error.
type Problems []Problem

func (p Problems) Error() string {
	parts := make([]string, len(p))
	for i, q := range p {
		parts[i] = q.Field + ": " + q.Message
	}
	return strings.Join(parts, "; ")
}

func (p *Problems) add(field, format string, args ...any) {
	*p = append(*p, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Parse reads a spec from a job's GLUE source and checks it: strict JSON
// (no unknown or repeated keys), then every field (Check). The error is
// Problems.
func Parse(source string) (Spec, error) {
	var s Spec
	if strings.TrimSpace(source) == "" {
		return Spec{}, Problems{{Field: "url", Message: "is required (the source of an HTTP job is its target: {\"url\": …})"}}
	}
	if err := strictjson.Decode([]byte(source), &s, strictjson.Options{DisallowUnknown: true}); err != nil {
		var se *strictjson.Error
		field := ""
		if errors.As(err, &se) {
			field = se.Path
		}
		return Spec{}, Problems{{Field: field, Message: "not a target spec: " + err.Error()}}
	}
	if err := s.Check(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// MethodOrDefault is the method to send.
func (s Spec) MethodOrDefault() string {
	if s.Method == "" {
		return "GET"
	}
	return s.Method
}

// Check validates every field; the error is Problems.
func (s Spec) Check() error {
	var p Problems
	m := s.MethodOrDefault()
	if !contains(Methods, m) {
		p.add("method", "must be one of %s, got %q", strings.Join(Methods, ", "), clip(s.Method))
	}
	checkURL(&p, s.URL)
	seen := map[string]string{}
	if n := len(s.Headers) + len(s.SecretHeaders); n > MaxHeaders {
		p.add("headers", "%d headers, at most %d allowed", n, MaxHeaders)
	}
	for _, name := range sortedKeys(s.Headers) {
		checkHeader(&p, "headers", name, s.Headers[name], seen, true)
	}
	for _, name := range sortedKeys(s.SecretHeaders) {
		checkHeader(&p, "secretHeaders", name, s.SecretHeaders[name], seen, false)
	}
	if len(s.Body) > MaxBodyLen {
		p.add("body", "is %d bytes, at most %d allowed", len(s.Body), MaxBodyLen)
	} else if _, err := ParseTemplate(s.Body); err != nil {
		p.add("body", "%v", err)
	}
	if s.Body != "" && (m == "GET" || m == "HEAD") {
		p.add("body", "a %s request sends no body; use POST, PUT or PATCH", m)
	}
	if _, err := ParseCodes(s.SuccessCodes); err != nil {
		p.add("successCodes", "%v", err)
	}
	if len(p) > 0 {
		return p
	}
	return nil
}

// checkURL checks the URL template: http(s), a host, no credentials and
// no fragment; placeholders only after the host, so that what a job may
// reach is decided when it is saved, not by a parameter at fire time.
func checkURL(p *Problems, raw string) {
	switch {
	case strings.TrimSpace(raw) == "":
		p.add("url", "is required")
		return
	case len(raw) > MaxURLLen:
		p.add("url", "is %d bytes, at most %d allowed", len(raw), MaxURLLen)
		return
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (!strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https")) {
		p.add("url", "must start with http:// or https://")
		return
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if strings.Contains(authority, "{{") {
		p.add("url", "placeholders may only appear in the path and query, not in the host")
		return
	}
	t, err := ParseTemplate(raw)
	if err != nil {
		p.add("url", "%v", err)
		return
	}
	u, err := url.Parse(t.Render(Vars{}, encURL))
	switch {
	case err != nil:
		p.add("url", "is not a URL: %v", unwrapURLError(err))
	case u.Hostname() == "":
		p.add("url", "has no host")
	case u.User != nil:
		p.add("url", "must not hold credentials (user:password@); send them in a secret header")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		p.add("url", "must not hold a fragment (#…): it is never sent")
	case strings.ContainsAny(raw, " \t\r\n"):
		p.add("url", "must not contain spaces or line breaks")
	}
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// hopByHop are headers the transport owns.
var reservedHeaders = []string{"host", "content-length", "transfer-encoding", "connection", "keep-alive",
	"upgrade", "te", "trailer", "proxy-connection", "proxy-authorization"}

func checkHeader(p *Problems, group, name, value string, seen map[string]string, templated bool) {
	field := group + "." + name
	lower := strings.ToLower(name)
	switch {
	case !validToken(name):
		p.add(field, "%q is not a header name", clip(name))
		return
	case contains(reservedHeaders, lower):
		p.add(field, "%s is set by the HTTP client, not by a job", name)
		return
	case seen[lower] != "":
		p.add(field, "is also given as %s", seen[lower])
		return
	}
	seen[lower] = field
	if len(value) > MaxHeaderValueLen {
		p.add(field, "is %d bytes, at most %d allowed", len(value), MaxHeaderValueLen)
		return
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		p.add(field, "must not contain line breaks or NUL")
		return
	}
	if templated {
		if _, err := ParseTemplate(value); err != nil {
			p.add(field, "%v", err)
		}
		return
	}
	switch {
	case value == "":
		p.add(field, "is empty: give the secret's value")
	case strings.HasPrefix(value, refPrefix) && !validRef(value):
		p.add(field, "%q is not a secret reference (ref: and 16 hex digits)", clip(value))
	}
}

// validToken reports an RFC 9110 token (a header name).
func validToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// Codes is a set of HTTP status codes.
type Codes []codeRange

type codeRange struct{ lo, hi int }

// Has reports whether code is in the set.
func (c Codes) Has(code int) bool {
	for _, r := range c {
		if code >= r.lo && code <= r.hi {
			return true
		}
	}
	return false
}

// ParseCodes reads "200-299,304"; "" is DefaultSuccessCodes.
func ParseCodes(s string) (Codes, error) {
	if strings.TrimSpace(s) == "" {
		s = DefaultSuccessCodes
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxSuccessCodes {
		return nil, fmt.Errorf("at most %d codes or ranges", MaxSuccessCodes)
	}
	var out Codes
	for _, f := range parts {
		f = strings.TrimSpace(f)
		lo, hi, isRange := strings.Cut(f, "-")
		a, errA := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var errB error
		if isRange {
			b, errB = strconv.Atoi(strings.TrimSpace(hi))
		}
		switch {
		case errA != nil || errB != nil:
			return nil, fmt.Errorf("%q is not a status code or a range like 200-299", clip(f))
		case a < 100 || b > 599 || a > b:
			return nil, fmt.Errorf("%q: status codes run from 100 to 599, low to high", clip(f))
		}
		out = append(out, codeRange{a, b})
	}
	return out, nil
}

// Canonical is the spec's JSON as it is stored: fixed field order, sorted
// header names, no insignificant space, so that an unchanged spec
// compares equal to the stored one.
func (s Spec) Canonical() string {
	b, _ := json.Marshal(s) // strings and string maps always marshal
	return string(b)
}

// TimeoutSeconds is the call's timeout for a job's executorTimeout.
func TimeoutSeconds(executorTimeout int) int {
	if executorTimeout <= 0 {
		return DefaultTimeoutSeconds
	}
	return min(executorTimeout, MaxTimeoutSeconds)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Request is one rendered call.
type Request struct {
	Method string
	URL    string
	Header map[string]string
	Body   string
}

// Render fills the spec's templates with v; secrets are the secret
// headers' plaintext values (Sealer.OpenAll). It fails when a rendered
// URL or header is not one (a parameter with a line break in a header).
func (s Spec) Render(v Vars, secrets map[string]string) (Request, error) {
	r := Request{Method: s.MethodOrDefault(), Header: make(map[string]string, len(s.Headers)+len(secrets))}
	t, err := ParseTemplate(s.URL)
	if err != nil {
		return Request{}, fmt.Errorf("url: %w", err)
	}
	r.URL = t.Render(v, encURL)
	for name, val := range s.Headers {
		t, err := ParseTemplate(val)
		if err != nil {
			return Request{}, fmt.Errorf("headers.%s: %w", name, err)
		}
		out := t.Render(v, encRaw)
		if strings.ContainsAny(out, "\r\n\x00") {
			return Request{}, fmt.Errorf("headers.%s: the rendered value holds a line break or NUL", name)
		}
		r.Header[name] = out
	}
	for name, val := range secrets {
		r.Header[name] = val
	}
	b, err := ParseTemplate(s.Body)
	if err != nil {
		return Request{}, fmt.Errorf("body: %w", err)
	}
	r.Body = b.Render(v, encRaw)
	return r, nil
}

// Call is one run of a target job, as dispatch hands it to the built-in
// executor: the log it reports to, the job's spec at rest, the values its
// templates may name, and the job's timeout and block strategy.
type Call struct {
	Vars
	// GlueType is the job's: HTTP (Source is a Spec) or AWS (an AWSSpec).
	GlueType string
	// Source is the job's GLUE source (the spec, secrets sealed).
	Source string
	// TimeoutSeconds is the job's executorTimeout (see TimeoutSeconds).
	TimeoutSeconds int
	// BlockStrategy is the job's (SERIAL_EXECUTION, DISCARD_LATER,
	// COVER_EARLY), applied per job as an executor applies it.
	BlockStrategy string
}
