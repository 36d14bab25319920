// Package platformauth signs and verifies the CTF platform's calls to the
// instancer's platform API: each call carries a fresh HS256 JSON Web Token,
// bound to that one request and accepted once.
//
// A platform token is not a team token (package token): its audience is
// Audience, it names no subject, it lives minutes rather than days, and its
// "req" claim is the digest of the request it was signed for (RequestDigest),
// so a token captured on the way cannot carry another method, path or body.
// Its keys come from a key directory of their own, read with token.LoadDir or
// token.KeysFromDir by the same rules as the team keys.
package platformauth

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/challenge-operator/challenge-operator/internal/token"
)

// Audience is the audience every platform token names, and the only one
// accepted: a team token names another (token.Audience, or the instancer's
// own), so none is taken for a platform call even when an admin reused the
// team key bytes for the platform.
const Audience = "challenge-operator-platform"

// DefaultMaxLifetime is the longest a platform token may be valid (expiry
// minus issue time) unless the Verifier says otherwise. A token is signed
// for one call, so minutes are plenty; the replay memory holds each token
// until it expires, so the bound also bounds that memory.
const DefaultMaxLifetime = 2 * time.Minute

// Leeway is how far in the future an issue time (or not-before) may lie:
// the platform's clock may run a little ahead of the instancer's. Expiry
// has none: an expired token is refused.
const Leeway = 30 * time.Second

// The length a token's "jti" must have, in bytes: enough to be unguessable
// and unique, short enough that the replay memory stays small.
const (
	MinJTILength = 16
	MaxJTILength = 128
)

// maxTokenBytes bounds the token read at all: a genuine one is well under
// a kilobyte, and no more of a stranger's header is decoded than this.
const maxTokenBytes = 4096

// Why a platform call was refused. Every error Verify returns wraps exactly
// one of them; none quotes the token or the body.
var (
	// ErrMalformed: not a JSON Web Token, or too long to be one of ours.
	ErrMalformed = errors.New("the platform token is malformed")
	// ErrUnknownKey: the token's key id ("kid") names no platform key.
	ErrUnknownKey = errors.New("the platform token names no platform key")
	// ErrSignature: not signed with HS256 by the key its key id names
	// (another algorithm, "none" and RS256 included, or another key).
	ErrSignature = errors.New("the platform token's signature is not valid")
	// ErrAudience: the token is not for Audience (a team token is not).
	ErrAudience = errors.New("the token is not a platform token (wrong audience)")
	// ErrSubject: the token names a subject, as every team token does.
	ErrSubject = errors.New("the platform token names a subject, as team tokens do")
	// ErrLifetime: no issue time or expiry, or valid for longer than the
	// Verifier's MaxLifetime.
	ErrLifetime = errors.New("the platform token's lifetime is missing or too long")
	// ErrExpired: the token's expiry has passed.
	ErrExpired = errors.New("the platform token has expired")
	// ErrNotYetValid: the token's issue time or not-before lies further in
	// the future than Leeway.
	ErrNotYetValid = errors.New("the platform token is not valid yet")
	// ErrJTI: the token has no "jti", or one shorter than MinJTILength or
	// longer than MaxJTILength.
	ErrJTI = errors.New("the platform token's jti is missing or of a bad length")
	// ErrRequestMismatch: the token's "req" is not the digest of the request
	// it came with (another method, path or body), or is missing.
	ErrRequestMismatch = errors.New("the platform token was not signed for this request")
	// ErrReplayed: a token with this "jti" was accepted before.
	ErrReplayed = errors.New("the platform token was used before")
	// ErrReplayCacheFull: the replay memory holds as many unexpired tokens
	// as it may, so no new one is accepted until some expire. Unlike the
	// others, this is the instancer's limit rather than a bad token: an HTTP
	// server answers it as unavailable (503), not unauthorised.
	ErrReplayCacheFull = errors.New("too many platform calls in flight: the replay memory is full")
	// ErrNoReplayCache: the Verifier was given no ReplayCache; it refuses
	// every call rather than accept replays.
	ErrNoReplayCache = errors.New("no replay memory: every platform call is refused")
)

// claims are a platform token's claims: the registered ones and "req".
type claims struct {
	jwt.RegisteredClaims
	// Req is RequestDigest of the request the token was signed for.
	Req string `json:"req,omitempty"`
}

// RequestDigest is the lowercase hex SHA-256 of a request's canonical form:
// method, path and body joined by newlines. method is as on the request line
// ("POST"); path is the path and query as sent (in net/http,
// Request.URL.RequestURI()); body is the whole body. Neither method nor path
// can hold a newline on the wire, so the form is unambiguous.
func RequestDigest(method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{'\n'})
	h.Write([]byte(path))
	h.Write([]byte{'\n'})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Sign returns the token a platform sends, as "Authorization: Bearer
// <token>", with one call: signed with key under key id kid, valid from now
// for lifetime, with jti (unique per call; NewJTI makes one) and the digest
// of the request (method, path, body) it will be sent with. The key and key
// id follow token.Load's rules (a DNS label; at least 32 bytes).
func Sign(key []byte, kid, jti, method, path string, body []byte, now time.Time, lifetime time.Duration) (string, error) {
	if _, skipped := token.Load(map[string][]byte{kid: key}); len(skipped) > 0 {
		return "", skipped[0]
	}
	if err := checkJTI(jti); err != nil {
		return "", err
	}
	if lifetime < time.Second {
		return "", fmt.Errorf("lifetime %s: want at least a second (token times are whole seconds)", lifetime)
	}
	if strings.Contains(method, "\n") || strings.Contains(path, "\n") {
		return "", errors.New("a method or path holds a newline, which no request line can")
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Audience:  jwt.ClaimStrings{Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(lifetime)),
			ID:        jti,
		},
		Req: RequestDigest(method, path, body),
	})
	t.Header["kid"] = kid
	return t.SignedString(key)
}

// NewJTI returns a random jti (26 characters of base32, 130 bits).
func NewJTI() string { return rand.Text() }

// Verifier checks platform calls. Like token.Verifier it is cheap to build
// per call with the keys in force (so a key rotation needs no restart), but
// its Replays must be one ReplayCache kept for the instancer's life: a
// fresh one per call would accept every replay.
type Verifier struct {
	// Keys are the platform keys by key id: a key directory of their own,
	// never the team keys' (token.LoadDir).
	Keys token.Keys
	// MaxLifetime is the longest expiry minus issue time accepted;
	// DefaultMaxLifetime when zero.
	MaxLifetime time.Duration
	// Replays remembers the tokens accepted; with none, every call is
	// refused (ErrNoReplayCache).
	Replays *ReplayCache
}

// Verify accepts a platform call when raw is a platform token signed with
// one of Keys for exactly this request (method, path, body; see
// RequestDigest), valid at now, and not accepted before. Each refusal wraps
// one of the Err* sentinels. The jti is recorded only once everything else
// holds, so a stranger who sends a captured token with another body first
// cannot spend it before the platform's own call arrives.
func (v Verifier) Verify(raw, method, path string, body []byte, now time.Time) error {
	_, err := v.VerifyCall(raw, method, path, body, now)
	return err
}

// Call is what an accepted platform token says of its call: what a server
// needs to act on it once across its replicas (ID, until ExpiresAt) and
// only on what existed when it was made (IssuedAt).
type Call struct {
	// ID is the token's jti, unique per call.
	ID string
	// IssuedAt is when the platform signed the call, by its clock.
	IssuedAt time.Time
	// ExpiresAt is when the token expires: no replica accepts it after.
	ExpiresAt time.Time
}

// VerifyCall is Verify, and returns the accepted call. Its ReplayCache is
// the process's own: a server of several replicas that acts on a call
// records Call.ID where they all look as well (the instancer: its team's
// Lease), or a call replayed to another replica is accepted there.
func (v Verifier) VerifyCall(raw, method, path string, body []byte, now time.Time) (Call, error) {
	if v.Replays == nil {
		return Call{}, ErrNoReplayCache
	}
	c, err := v.parse(raw)
	if err != nil {
		return Call{}, err
	}
	if err := v.checkClaims(c, now); err != nil {
		return Call{}, err
	}
	if c.Req == "" {
		return Call{}, fmt.Errorf("%w: it carries no request digest", ErrRequestMismatch)
	}
	if c.Req != RequestDigest(method, path, body) {
		return Call{}, ErrRequestMismatch
	}
	if err := v.Replays.admit(c.ID, c.ExpiresAt.Time, now); err != nil {
		return Call{}, err
	}
	return Call{ID: c.ID, IssuedAt: c.IssuedAt.Time, ExpiresAt: c.ExpiresAt.Time}, nil
}

// parse checks the token's form, algorithm, key and signature, and returns
// its claims unjudged.
func (v Verifier) parse(raw string) (*claims, error) {
	if len(raw) > maxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxTokenBytes)
	}
	c := &claims{}
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		// One encoding per token: no other spelling of a signature passes.
		jwt.WithStrictDecoding(),
		// The claims are judged by checkClaims, each refusal with its own
		// sentinel; the signature is still verified.
		jwt.WithoutClaimsValidation(),
	)
	var unknownKid string
	_, err := parser.ParseWithClaims(raw, c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key, ok := v.Keys[kid]
		if !ok {
			unknownKid = kid
			return nil, ErrUnknownKey
		}
		return key, nil
	})
	// jwt's own messages are not passed on: some quote parts of the token.
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, ErrUnknownKey):
		return nil, fmt.Errorf("%w: key id %s", ErrUnknownKey, describeKid(unknownKid))
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return nil, ErrSignature
	default:
		return nil, ErrMalformed
	}
}

// describeKid names a key id a stranger sent, quoted (so nothing it holds
// is taken for a log line) and only when it is short enough to be one.
func describeKid(kid string) string {
	switch {
	case kid == "":
		return "missing"
	case len(kid) > 63:
		return fmt.Sprintf("of %d bytes", len(kid))
	default:
		return fmt.Sprintf("%q", kid)
	}
}

// checkClaims judges a signed token's claims at now, all but "req" and
// replay.
func (v Verifier) checkClaims(c *claims, now time.Time) error {
	maxLifetime := cmp.Or(v.MaxLifetime, DefaultMaxLifetime)
	switch {
	case len(c.Audience) != 1 || c.Audience[0] != Audience:
		return ErrAudience
	// Team tokens always name their team as subject; a platform token never
	// needs one, so any subject marks a token that is not ours.
	case c.Subject != "":
		return ErrSubject
	case c.IssuedAt == nil || c.ExpiresAt == nil:
		return fmt.Errorf("%w: it needs both an issue time and an expiry", ErrLifetime)
	case !c.ExpiresAt.After(c.IssuedAt.Time):
		return fmt.Errorf("%w: it expires no later than it was issued", ErrLifetime)
	case c.ExpiresAt.Sub(c.IssuedAt.Time) > maxLifetime:
		return fmt.Errorf("%w: valid for %s, longer than %s", ErrLifetime, c.ExpiresAt.Sub(c.IssuedAt.Time), maxLifetime)
	case c.IssuedAt.After(now.Add(Leeway)):
		return fmt.Errorf("%w: issued %s from now", ErrNotYetValid, c.IssuedAt.Sub(now).Round(time.Second))
	case c.NotBefore != nil && c.NotBefore.After(now.Add(Leeway)):
		return fmt.Errorf("%w: not before %s from now", ErrNotYetValid, c.NotBefore.Sub(now).Round(time.Second))
	case !now.Before(c.ExpiresAt.Time):
		return fmt.Errorf("%w: %s ago", ErrExpired, now.Sub(c.ExpiresAt.Time).Round(time.Second))
	}
	return checkJTI(c.ID)
}

// checkJTI refuses a jti of a length outside [MinJTILength, MaxJTILength].
func checkJTI(jti string) error {
	if len(jti) < MinJTILength || len(jti) > MaxJTILength {
		return fmt.Errorf("%w: %d bytes, want %d to %d", ErrJTI, len(jti), MinJTILength, MaxJTILength)
	}
	return nil
}
