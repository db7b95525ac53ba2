package target

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Prefixes of a secret header's value at rest and as shown.
const (
	sealedPrefix = "enc:v1:"
	refPrefix    = "ref:"
	refHexLen    = 16
)

// ErrNoKey: a spec holds a secret header on an installation without a key.
var ErrNoKey = errors.New("secret headers need the installation's key, and this deployment has none")

// Sealer encrypts secret header values at rest (AES-256-GCM) with a key
// derived from the installation's secret: its session key, or its admin
// token when none is set, so that every node of a cluster derives the
// same key and nothing new has to be provisioned. Rotating that secret
// makes the stored values unreadable: their runs fail saying so, and a
// person gives the values again.
type Sealer struct {
	aead cipher.AEAD
}

// hkdfInfo separates this key from every other use of the same secret.
const hkdfInfo = "xjob target secret headers v1"

// NewSealer derives a Sealer from secret (at least 16 bytes).
func NewSealer(secret string) (*Sealer, error) {
	if len(secret) < 16 {
		return nil, errors.New("target sealer: the secret must be at least 16 bytes")
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, hkdfInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("target sealer: derive key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("target sealer: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("target sealer: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts the value of header name; the name is authenticated with
// it, so a value moved to another header does not open.
func (s *Sealer) Seal(name, plaintext string) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go ≥ 1.24)
	ct := s.aead.Seal(nonce, nonce, []byte(plaintext), []byte(strings.ToLower(name)))
	return sealedPrefix + base64.RawURLEncoding.EncodeToString(ct)
}

// Open decrypts a value Seal made for header name.
func (s *Sealer) Open(name, sealed string) (string, error) {
	raw, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return "", fmt.Errorf("secret header %s is not sealed", name)
	}
	ct, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(ct) < s.aead.NonceSize() {
		return "", fmt.Errorf("secret header %s: sealed value is damaged", name)
	}
	pt, err := s.aead.Open(nil, ct[:s.aead.NonceSize()], ct[s.aead.NonceSize():], []byte(strings.ToLower(name)))
	if err != nil {
		return "", fmt.Errorf("secret header %s cannot be decrypted: was the session key or admin token changed? Give its value again", name)
	}
	return string(pt), nil
}

// IsSealed reports a value at rest.
func IsSealed(v string) bool { return strings.HasPrefix(v, sealedPrefix) }

// Ref is the reference shown for a sealed value: a digest of the
// ciphertext (whose nonce is random), so it says nothing of the secret,
// yet names the stored value exactly.
func Ref(sealed string) string {
	sum := sha256.Sum256([]byte(sealed))
	return refPrefix + hex.EncodeToString(sum[:])[:refHexLen]
}

func validRef(v string) bool {
	h, ok := strings.CutPrefix(v, refPrefix)
	if !ok || len(h) != refHexLen {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// Redact replaces every secret header's value of the GLUE source of an
// HTTP job by its reference. A source that is not a spec is returned as
// it is (Parse refuses it wherever it is saved).
func Redact(source string) string {
	s, err := Parse(source)
	if err != nil || len(s.SecretHeaders) == 0 {
		return source
	}
	out := make(map[string]string, len(s.SecretHeaders))
	for name, v := range s.SecretHeaders {
		if IsSealed(v) {
			v = Ref(v)
		} else if !validRef(v) {
			v = refPrefix + "unsealed"
		}
		out[name] = v
	}
	s.SecretHeaders = out
	return s.Canonical()
}

// Resolve turns the spec a person saves (next) into the one to store,
// given the stored one (old, "" for a new job): every secret header is
// sealed — a plaintext value sealed with s (kept as stored when the stored
// value decrypts to the same plaintext, so saving an unchanged job changes
// nothing), a reference replaced by the stored value it names. A
// reference that names no stored value of the same header, or a sealed
// value other than the stored one, is refused: it would make this job
// send a secret that belongs to another. s may be nil when next holds no
// plaintext secret. The error is Problems.
func Resolve(s *Sealer, next Spec, old string) (Spec, error) {
	if len(next.SecretHeaders) == 0 {
		return next, nil
	}
	stored := map[string]string{} // lower-cased name → sealed value
	sameOrigin := false
	if prev, err := Parse(old); err == nil {
		for name, v := range prev.SecretHeaders {
			stored[strings.ToLower(name)] = v
		}
		sameOrigin = origin(prev.URL) == origin(next.URL)
	}
	var p Problems
	out := make(map[string]string, len(next.SecretHeaders))
	for _, name := range sortedKeys(next.SecretHeaders) {
		v, field := next.SecretHeaders[name], "secretHeaders."+name
		have := stored[strings.ToLower(name)]
		switch {
		case validRef(v):
			if have == "" || Ref(have) != v {
				p.add(field, "%s names a secret this job does not hold (a reference only keeps the stored value): give the secret's value", v)
				continue
			}
			if !sameOrigin {
				p.add(field, "the URL's scheme, host or port changed: give the secret's value again (a stored secret is only sent where it was given for)")
				continue
			}
			out[name] = have
		case IsSealed(v):
			if v != have || !sameOrigin {
				p.add(field, "an encrypted value cannot be given: give the secret's value")
				continue
			}
			out[name] = have
		case s == nil:
			p.add(field, "%v", ErrNoKey)
		default:
			if have != "" {
				if pt, err := s.Open(name, have); err == nil && pt == v {
					out[name] = have
					continue
				}
			}
			out[name] = s.Seal(name, v)
		}
	}
	if len(p) > 0 {
		return Spec{}, p
	}
	next.SecretHeaders = out
	return next, nil
}

// origin is a URL's scheme, host and port, lower-cased: where a secret
// header is sent. The host holds no placeholder (Check), so it is the
// template's own text.
func origin(rawURL string) string {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return strings.ToLower(scheme + "://" + rest)
}

// OpenAll returns the spec's secret headers decrypted.
func (s *Sealer) OpenAll(spec Spec) (map[string]string, error) {
	out := make(map[string]string, len(spec.SecretHeaders))
	for name, v := range spec.SecretHeaders {
		if s == nil {
			return nil, ErrNoKey
		}
		pt, err := s.Open(name, v)
		if err != nil {
			return nil, err
		}
		out[name] = pt
	}
	return out, nil
}
