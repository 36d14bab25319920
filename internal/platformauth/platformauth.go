// Package platformauth authenticates the CTF platform's calls to the
// instancer's platform API (flag verification, solves). The platform signs
// each call on its own: an HS256 JSON Web Token, with a key of its own
// directory (never a team token key), naming this audience, living two
// minutes at most, used once (its jti) and bound to the request it came
// with (req: the SHA-256 of its method, path and body). A team token, a
// token replayed, or a token carried by another request is refused.
package platformauth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/challenge-operator/challenge-operator/internal/token"
)

// Audience is what every platform token names, and no team token does.
const Audience = "challenge-operator-platform"

// DefaultMaxLifetime is the longest a platform token may live (expiry minus
// issue time): long enough for a clock a little off, short enough that the
// replay cache stays small.
const DefaultMaxLifetime = 2 * time.Minute

// leeway forgives clocks that differ a little.
const leeway = 30 * time.Second

// maxSeen bounds the replay cache: beyond it calls are refused rather than
// memory grown (more than 800 calls a second for two minutes).
const maxSeen = 100_000

// Why a call is refused; the errors never hold the token or the body.
var (
	ErrInvalid    = errors.New("platformauth: not a token signed with a platform key")
	ErrTeamToken  = errors.New("platformauth: a team's token (it names a subject)")
	ErrLifetime   = errors.New("platformauth: the token lives longer than allowed")
	ErrNoID       = errors.New("platformauth: the token has no jti of 16 to 128 characters")
	ErrReplayed   = errors.New("platformauth: the token was used already")
	ErrRequest    = errors.New("platformauth: the token was signed for another request")
	ErrOverloaded = errors.New("platformauth: too many calls to remember; try again")
)

// claims are a platform token's claims.
type claims struct {
	jwt.RegisteredClaims
	// Request is RequestDigest of the call the token was signed for.
	Request string `json:"req"`
}

// RequestDigest is the lower-case hex SHA-256 of a call's method, path (as
// sent, with its query) and body, each on its own line.
func RequestDigest(method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method + "\n" + path + "\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Sign is what a platform does for each call: a token for the call of
// method, path and body, signed with key (its id kid), used once (jti).
func Sign(key []byte, kid, jti, method, path string, body []byte, now time.Time, lifetime time.Duration) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{
		RegisteredClaims: jwt.RegisteredClaims{Audience: jwt.ClaimStrings{Audience}, ID: jti,
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(lifetime))},
		Request: RequestDigest(method, path, body),
	})
	t.Header["kid"] = kid
	return t.SignedString(key)
}

// Verifier checks platform calls and remembers the tokens it took until
// they expire. Its zero value refuses every call; it is safe for
// concurrent use.
type Verifier struct {
	// MaxLifetime is the longest a token may live; DefaultMaxLifetime when zero.
	MaxLifetime time.Duration

	mu   sync.Mutex
	seen map[string]time.Time // jti: when it expires
}

// Verify checks raw, the bearer token of a call of method, path and body,
// with keys at now, and takes its jti.
func (v *Verifier) Verify(keys token.Keys, raw, method, path string, body []byte, now time.Time) error {
	var c claims
	parser := jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithAudience(Audience),
		jwt.WithIssuedAt(), jwt.WithExpirationRequired(), jwt.WithLeeway(leeway), jwt.WithTimeFunc(func() time.Time { return now }))
	_, err := parser.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key, ok := keys[kid]
		if !ok {
			return nil, fmt.Errorf("no key %q", kid)
		}
		return key, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	maxLifetime := v.MaxLifetime
	if maxLifetime <= 0 {
		maxLifetime = DefaultMaxLifetime
	}
	switch {
	case c.Subject != "":
		return ErrTeamToken
	case c.IssuedAt == nil || c.ExpiresAt.Sub(c.IssuedAt.Time) > maxLifetime:
		return ErrLifetime
	case len(c.ID) < 16 || len(c.ID) > 128:
		return ErrNoID
	case c.Request != RequestDigest(method, path, body):
		return ErrRequest
	}
	return v.take(c.ID, c.ExpiresAt.Add(leeway), now)
}

// take remembers jti until it expires, or refuses it if it is remembered.
func (v *Verifier) take(jti string, expires, now time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seen = map[string]time.Time{}
	}
	if at, ok := v.seen[jti]; ok && now.Before(at) {
		return ErrReplayed
	}
	if len(v.seen) >= maxSeen {
		for id, at := range v.seen {
			if !now.Before(at) {
				delete(v.seen, id)
			}
		}
		if len(v.seen) >= maxSeen {
			return ErrOverloaded
		}
	}
	v.seen[jti] = expires
	return nil
}
