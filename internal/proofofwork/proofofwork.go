// Package proofofwork asks a caller for a little work before an action: an
// ALTCHA challenge (github.com/altcha-org/altcha-lib-go), which the caller
// solves by hashing its way to a hidden number. A challenge is stateless
// (HMAC-signed), bound to what it is for (a team's action on a template),
// lives two minutes, and its solution is taken once. Checking a solution
// costs two SHA-256 and an HMAC: microseconds.
package proofofwork

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	altcha "github.com/altcha-org/altcha-lib-go"
)

// Lifetime is how long a challenge may be solved and its solution used.
const Lifetime = 2 * time.Minute

// leeway forgives a replica whose clock is a little ahead of the one that
// issued the challenge.
const leeway = 30 * time.Second

// maxPayload bounds a solution's encoding: a real one is about 400
// characters.
const maxPayload = 2048

// maxUsed bounds the solutions remembered. Beyond it the oldest is
// forgotten: replaying it then costs the 100,000 solutions that pushed it
// out, so no action ever costs less than one solution, and a flood never
// refuses everyone.
const maxUsed = 100_000

// algorithm is the only one issued and accepted.
const algorithm = altcha.SHA256

// The challenge's parameters, carried in its salt under its signature.
const (
	paramExpires  = "expires" // ALTCHA's: Unix seconds
	paramTeam     = "team"
	paramTemplate = "template"
	paramAction   = "action"
)

// Why a solution is refused.
var (
	ErrMalformed = errors.New("proofofwork: not an ALTCHA solution")
	ErrWrong     = errors.New("proofofwork: not the solution of a challenge signed with this key")
	ErrExpired   = errors.New("proofofwork: the challenge expired")
	ErrPurpose   = errors.New("proofofwork: solved for another team, template or action")
	ErrReplayed  = errors.New("proofofwork: the solution was used already")
)

// Purpose is what a challenge is for: a team's action on a template.
type Purpose struct {
	Team     string
	Template string
	Action   string
}

// Challenge is what the caller solves, as ALTCHA's widget and libraries
// read it, and when it expires.
type Challenge struct {
	altcha.Challenge
	ExpiresAt time.Time `json:"expiresAt"`
}

// New issues a challenge for p at now, signed with key: the caller finds
// the number up to difficulty (ALTCHA's maxNumber) whose SHA-256 after the
// salt is the challenge, difficulty/2 hashes on average.
func New(key []byte, p Purpose, difficulty int64, now time.Time) (Challenge, error) {
	expires := now.Add(Lifetime).Truncate(time.Second)
	c, err := altcha.CreateChallenge(altcha.ChallengeOptions{
		Algorithm: algorithm,
		MaxNumber: difficulty,
		HMACKey:   string(key),
		Expires:   &expires,
		Params:    url.Values{paramTeam: {p.Team}, paramTemplate: {p.Template}, paramAction: {p.Action}},
	})
	if err != nil {
		return Challenge{}, fmt.Errorf("proofofwork: issuing a challenge: %w", err)
	}
	return Challenge{Challenge: c, ExpiresAt: expires.UTC()}, nil
}

// Solve is what a caller does: it finds c's number and encodes the
// solution as Verify reads it. The page does the same in JavaScript; Go
// clients and the tests use this.
func Solve(c Challenge) (string, error) {
	found, err := altcha.SolveChallenge(c.Challenge.Challenge, c.Salt, altcha.Algorithm(c.Algorithm), int(c.MaxNumber), 0, nil)
	if err != nil {
		return "", fmt.Errorf("proofofwork: solving: %w", err)
	}
	if found == nil {
		return "", errors.New("proofofwork: no number up to maxNumber solves the challenge")
	}
	return Encode(c, int64(found.Number))
}

// Encode is the solution of c whose number is number, as Verify reads it.
func Encode(c Challenge, number int64) (string, error) {
	data, err := json.Marshal(altcha.Payload{Algorithm: c.Algorithm, Challenge: c.Challenge.Challenge, Number: number,
		Salt: c.Salt, Signature: c.Signature})
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(data), nil
}

// Verifier checks solutions and remembers those it took until their
// challenge has expired, so that each is used once. Its zero value is
// ready; it is safe for concurrent use. It remembers in memory: each
// process that verifies takes a solution once.
type Verifier struct {
	mu   sync.Mutex
	used map[[32]byte]struct{}
	// order holds the used solutions oldest first: each is kept the same
	// time after its use, so the first to forget are at the front.
	order []usedSolution
}

type usedSolution struct {
	signature [32]byte
	until     time.Time
}

// Verify checks payload, a solution as ALTCHA encodes it (base64 of a JSON
// object: algorithm, challenge, number, salt, signature), against key, p
// and now, and takes it.
func (v *Verifier) Verify(key []byte, payload string, p Purpose, now time.Time) error {
	solution, err := decode(payload)
	if err != nil {
		return err
	}
	// Expiry is checked below, with the caller's clock.
	if ok, err := altcha.VerifySolutionSafe(solution, string(key), false); err != nil || !ok {
		return ErrWrong
	}
	// The signature covers the salt, and so these parameters.
	params := altcha.ExtractParams(solution)
	expires, err := strconv.ParseInt(params.Get(paramExpires), 10, 64)
	switch {
	case err != nil:
		return ErrWrong // signed, but not by New
	case !now.Before(time.Unix(expires, 0)):
		return ErrExpired
	case time.Unix(expires, 0).After(now.Add(Lifetime + leeway)):
		return ErrWrong // an issuer's clock far ahead: longer than remembered
	case params.Get(paramTeam) != p.Team || params.Get(paramTemplate) != p.Template || params.Get(paramAction) != p.Action:
		return ErrPurpose
	}
	// The signature, not the salt, names a solution: digits moved from the
	// number to the end of the salt hash the same and are signed the same.
	var signature [32]byte
	if n, err := hex.Decode(signature[:], []byte(solution.Signature)); err != nil || n != len(signature) {
		return ErrWrong
	}
	return v.take(signature, now)
}

// decode reads an ALTCHA solution of the one algorithm issued.
func decode(payload string) (altcha.Payload, error) {
	if len(payload) > maxPayload {
		return altcha.Payload{}, ErrMalformed
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return altcha.Payload{}, ErrMalformed
	}
	var solution altcha.Payload
	if err := json.Unmarshal(data, &solution); err != nil || solution.Algorithm != string(algorithm) {
		return altcha.Payload{}, ErrMalformed
	}
	return solution, nil
}

// take remembers signature until every challenge it could belong to has
// expired, or refuses it if it is remembered.
func (v *Verifier) take(signature [32]byte, now time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.used == nil {
		v.used = map[[32]byte]struct{}{}
	}
	for len(v.order) > 0 && !now.Before(v.order[0].until) {
		v.forgetOldest()
	}
	if _, ok := v.used[signature]; ok {
		return ErrReplayed
	}
	if len(v.order) >= maxUsed {
		v.forgetOldest()
	}
	v.used[signature] = struct{}{}
	v.order = append(v.order, usedSolution{signature: signature, until: now.Add(Lifetime + leeway)})
	return nil
}

func (v *Verifier) forgetOldest() {
	delete(v.used, v.order[0].signature)
	v.order = v.order[1:]
}
