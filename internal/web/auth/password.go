package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Password limits. The upper bound keeps a hash request cheap to refuse.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 128
)

// Params are argon2id's cost parameters, stored in every hash so that they
// can change without invalidating old hashes.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
}

// DefaultParams follow OWASP's argon2id minimum (19 MiB, 2 passes, 1 lane).
var DefaultParams = Params{Memory: 19 * 1024, Time: 2, Threads: 1}

// TestParams are cheap parameters for tests; never use them in a main.
var TestParams = Params{Memory: 64, Time: 1, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
)

var b64 = base64.RawStdEncoding

// CheckPasswordRules reports a password a person may not choose.
func CheckPasswordRules(pw string) error {
	if n := len([]rune(pw)); n < MinPasswordLen || len(pw) > MaxPasswordLen {
		return fmt.Errorf("must be %d to %d characters", MinPasswordLen, MaxPasswordLen)
	}
	return nil
}

// HashPassword returns pw's argon2id hash in PHC form:
// $argon2id$v=19$m=…,t=…,p=…$salt$key (unpadded base64).
func HashPassword(pw string, p Params) (string, error) {
	if err := CheckPasswordRules(pw); err != nil {
		return "", err
	}
	return hashPassword(pw, p), nil
}

// hashPassword is HashPassword without the rules: an imported user's old
// password, checked against its legacy hash, is re-hashed as it is.
func hashPassword(pw string, p Params) string {
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (Go ≥ 1.24)
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// errHash is a stored hash this package cannot read.
var errHash = errors.New("not an argon2id PHC hash")

// Parameter bounds accepted from a stored hash: a damaged or hostile hash
// must not make a login allocate gigabytes or spin for minutes.
const (
	maxMemory = 1 << 20 // KiB (1 GiB)
	maxTime   = 16
)

// parseHash reads a PHC argon2id hash.
func parseHash(h string) (Params, []byte, []byte, error) {
	parts := strings.Split(h, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return Params{}, nil, nil, errHash
	}
	var p Params
	for i, kv := range strings.Split(parts[3], ",") {
		name, val, ok := strings.Cut(kv, "=")
		want := [...]string{"m", "t", "p"}
		if !ok || i >= len(want) || name != want[i] {
			return Params{}, nil, nil, errHash
		}
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			return Params{}, nil, nil, errHash
		}
		switch name {
		case "m":
			p.Memory = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			if n > 255 {
				return Params{}, nil, nil, errHash
			}
			p.Threads = uint8(n)
		}
	}
	if p.Memory < 8 || p.Memory > maxMemory || p.Time < 1 || p.Time > maxTime || p.Threads < 1 {
		return Params{}, nil, nil, errHash
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return Params{}, nil, nil, errHash
	}
	key, err := b64.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return Params{}, nil, nil, errHash
	}
	return p, salt, key, nil
}

// CheckPassword reports whether pw matches hash, in constant time. An
// unreadable hash matches nothing.
func CheckPassword(hash, pw string) bool {
	if len(pw) > MaxPasswordLen {
		return false
	}
	p, salt, key, err := parseHash(hash)
	if err != nil {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}

// RandomPassword returns a generated password: 26 base32 characters
// (128 bits) from crypto/rand.
func RandomPassword() string { return rand.Text() }
