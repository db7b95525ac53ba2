package target

import (
	"errors"
	"strings"
	"testing"
)

func newSealer(t *testing.T, secret string) *Sealer {
	t.Helper()
	s, err := NewSealer(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	s := newSealer(t, "session-key-0123456789abcdef")
	sealed := s.Seal("Authorization", "Bearer hunter2")
	if !IsSealed(sealed) || strings.Contains(sealed, "hunter2") {
		t.Fatalf("sealed = %q", sealed)
	}
	if pt, err := s.Open("authorization", sealed); err != nil || pt != "Bearer hunter2" {
		t.Fatalf("Open = %q, %v", pt, err)
	}
	if _, err := s.Open("X-Other", sealed); err == nil {
		t.Fatal("a value moved to another header opened")
	}
	other := newSealer(t, "another-session-key-0123456789")
	if _, err := other.Open("Authorization", sealed); err == nil || !strings.Contains(err.Error(), "session key or admin token") {
		t.Fatalf("Open with another key = %v", err)
	}
	if _, err := NewSealer("short"); err == nil {
		t.Fatal("short secret accepted")
	}
}

// TestResolveRoundTrip: a spec saved, shown (redacted) and saved back
// unchanged keeps its sealed value byte for byte; the shown form never
// holds the secret.
func TestResolveRoundTrip(t *testing.T) {
	t.Parallel()
	s := newSealer(t, "session-key-0123456789abcdef")
	in, err := Parse(`{"url":"https://h/","secretHeaders":{"Authorization":"Bearer hunter2"}}`)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := Resolve(s, in, "")
	if err != nil {
		t.Fatal(err)
	}
	storedSrc := stored.Canonical()
	shown := Redact(storedSrc)
	if strings.Contains(shown, "hunter2") || strings.Contains(shown, "enc:v1:") || !strings.Contains(shown, "ref:") {
		t.Fatalf("shown = %s", shown)
	}
	back, err := Parse(shown)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Resolve(s, back, storedSrc)
	if err != nil || again.Canonical() != storedSrc {
		t.Fatalf("re-save of the shown form: %v\n%s\nwant %s", err, again.Canonical(), storedSrc)
	}
	// The same plaintext given again keeps the stored ciphertext too.
	again, err = Resolve(s, in, storedSrc)
	if err != nil || again.Canonical() != storedSrc {
		t.Fatalf("re-save of the same plaintext changed the stored value: %v", err)
	}
	// A new plaintext is sealed afresh.
	in.SecretHeaders = map[string]string{"Authorization": "Bearer new"}
	again, err = Resolve(s, in, storedSrc)
	if err != nil || again.Canonical() == storedSrc {
		t.Fatalf("a new value kept the old one: %v", err)
	}
	if got, _ := s.OpenAll(again); got["Authorization"] != "Bearer new" {
		t.Fatalf("OpenAll = %v", got)
	}
}

func TestResolveRefusesForeignSecrets(t *testing.T) {
	t.Parallel()
	s := newSealer(t, "session-key-0123456789abcdef")
	a, _ := Resolve(s, Spec{URL: "https://a/", SecretHeaders: map[string]string{"Authorization": "A"}}, "")
	sealedA := a.SecretHeaders["Authorization"]
	tests := []struct {
		name string
		v    string
		old  string
		msg  string
	}{
		{"reference on a new job", Ref(sealedA), "", "does not hold"},
		{"reference of another value", Ref(s.Seal("Authorization", "B")), a.Canonical(), "does not hold"},
		{"ciphertext pasted", s.Seal("Authorization", "B"), a.Canonical(), "cannot be given"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Resolve(s, Spec{URL: "https://evil/", SecretHeaders: map[string]string{"Authorization": tc.v}}, tc.old)
			var p Problems
			if !errors.As(err, &p) || p[0].Field != "secretHeaders.Authorization" || !strings.Contains(p[0].Message, tc.msg) {
				t.Fatalf("Resolve = %v, want a refusal naming the header, containing %q", err, tc.msg)
			}
		})
	}
	// The job's own reference, with the URL pointed elsewhere.
	moved := Spec{URL: "https://evil/", SecretHeaders: map[string]string{"Authorization": Ref(sealedA)}}
	if _, err := Resolve(s, moved, a.Canonical()); err == nil || !strings.Contains(err.Error(), "host or port changed") {
		t.Fatalf("Resolve with the host changed = %v", err)
	}
	moved.URL = "https://a/other/path?x=1"
	if _, err := Resolve(s, moved, a.Canonical()); err != nil {
		t.Fatalf("Resolve with only the path changed = %v", err)
	}
	if _, err := Resolve(nil, Spec{URL: "https://a/", SecretHeaders: map[string]string{"X": "v"}}, ""); !errors.As(err, new(Problems)) ||
		!strings.Contains(err.Error(), "key") {
		t.Fatalf("Resolve without a key = %v", err)
	}
}
