// Package flagtag makes per-team flags that say whose they are. A flag's
// body is the team's id, encrypted and authenticated under a key derived
// from the organiser's flag key, bound to the challenge and the flag's name:
// whoever holds the key tells a correct submission, a wrong one and another
// team's flag (and which team's) apart offline, from the submission alone,
// without storing a flag or listing the teams. A team that reads its own
// flag learns nothing of the key, and cannot make another team's.
//
// The construction is a synthetic-IV AEAD: the nonce is an HMAC of the
// challenge, the flag's name and the team (so a flag is the same at every
// render, and two teams' nonces differ), and AES-256-GCM seals the team's id
// under it, the challenge and the name as associated data. Verification
// opens the body, which authenticates it, and checks the nonce again.
package flagtag

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Verdict is what a submission is.
type Verdict int

const (
	// Wrong is no flag of this challenge's: a typo, a guess, a forgery, or
	// another challenge's or flag name's.
	Wrong Verdict = iota
	// Correct is the submitting team's own flag.
	Correct
	// OtherTeam is a genuine flag of this challenge, another team's: a
	// shared flag.
	OtherTeam
)

func (v Verdict) String() string {
	switch v {
	case Correct:
		return "correct"
	case OtherTeam:
		return "other-team"
	}
	return "wrong"
}

// nonceSize is AES-GCM's standard nonce; tagSize its authentication tag.
const (
	nonceSize = 12
	tagSize   = 16
)

// encoding writes bodies in lower-case base32 without padding: letters and
// digits only, whatever a flag format surrounds them with.
var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Codec makes and reads the flags of one organiser key.
type Codec struct {
	aead   cipher.AEAD
	macKey []byte
	// staticKey keys the digests of static flags (StaticDigest).
	staticKey []byte
}

// ErrShortKey refuses a key too short to derive anything secret from.
var ErrShortKey = errors.New("flagtag: the flag key must hold at least 16 bytes")

// New derives the Codec's keys from the organiser's flag key (HKDF-SHA256,
// one key to encrypt, one to make nonces).
func New(key []byte) (*Codec, error) {
	if len(key) < 16 {
		return nil, ErrShortKey
	}
	encKey, err := hkdf.Key(sha256.New, key, nil, "challenge-operator flagtag v1 encryption", 32)
	if err != nil {
		return nil, err
	}
	macKey, err := hkdf.Key(sha256.New, key, nil, "challenge-operator flagtag v1 nonce", 32)
	if err != nil {
		return nil, err
	}
	staticKey, err := hkdf.Key(sha256.New, key, nil, "challenge-operator flagtag v1 static", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Codec{aead: aead, macKey: macKey, staticKey: staticKey}, nil
}

// Body is the flag body of team for the flag name of challenge: what a
// flag format's %s becomes.
func (c *Codec) Body(challenge, name, team string) string {
	nonce := c.nonce(challenge, name, team)
	sealed := c.aead.Seal(nonce, nonce, []byte(team), associated(challenge, name))
	return encoding.EncodeToString(sealed)
}

// Verify says what body, a submission's flag body, is for team's flag name
// of challenge, and, for another team's flag, whose it is. It takes the same
// time whatever the team, for a body of a given length.
func (c *Codec) Verify(challenge, name, team, body string) (Verdict, string) {
	owner, ok := c.Owner(challenge, name, body)
	if !ok {
		return Wrong, ""
	}
	if subtle.ConstantTimeCompare([]byte(owner), []byte(team)) == 1 {
		return Correct, owner
	}
	return OtherTeam, owner
}

// Owner is the team whose flag name of challenge body is, if it is one.
func (c *Codec) Owner(challenge, name, body string) (string, bool) {
	sealed, err := encoding.DecodeString(body)
	// One spelling per body: base32 ignores the unused bits of its last
	// character, which would let a shared flag be submitted disguised.
	if err != nil || len(sealed) < nonceSize+tagSize || encoding.EncodeToString(sealed) != body {
		return "", false
	}
	nonce, ciphertext := sealed[:nonceSize], sealed[nonceSize:]
	team, err := c.aead.Open(nil, nonce, ciphertext, associated(challenge, name))
	if err != nil {
		return "", false
	}
	// The nonce binds the body to what it seals: a body sealed under a
	// nonce of the codec's own choosing only.
	if !hmac.Equal(nonce, c.nonce(challenge, name, string(team))) {
		return "", false
	}
	return string(team), true
}

// StaticDigest is what a static flag's value may be published as: an
// HMAC-SHA256 under a key of the codec's own, bound to the challenge and the
// flag's name, in hex. Only the key's holders can check a submission
// against it; nobody can guess a low-entropy flag from it.
func (c *Codec) StaticDigest(challenge, name, value string) string {
	mac := hmac.New(sha256.New, c.staticKey)
	mac.Write(associated(challenge, name))
	mac.Write([]byte{0})
	mac.Write([]byte(value))
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifyStatic tells whether submission is the static flag name of
// challenge whose StaticDigest is digest, in constant time.
func (c *Codec) VerifyStatic(challenge, name, submission, digest string) bool {
	return hmac.Equal([]byte(c.StaticDigest(challenge, name, submission)), []byte(digest))
}

// nonce is the synthetic IV of a team's flag name of challenge.
func (c *Codec) nonce(challenge, name, team string) []byte {
	mac := hmac.New(sha256.New, c.macKey)
	mac.Write(associated(challenge, name))
	mac.Write([]byte{0})
	mac.Write([]byte(team))
	return mac.Sum(nil)[:nonceSize]
}

// associated binds a body to its challenge and flag name; NUL never occurs
// in either, so no two pairs give the same bytes.
func associated(challenge, name string) []byte {
	return []byte(challenge + "\x00" + name)
}

// DefaultKeyFile is where the operator and the instancer read the flag key:
// the cluster admin's Secret challenge-operator-flag-key, key "key",
// mounted as a volume.
const DefaultKeyFile = "/etc/challenge-operator/flag-key/key"

// LoadKeyFile is the Codec of the key in the file at path, nil when there is
// no such file (per-team flags are then refused, with a reason naming the
// Secret). The bytes are the key as they are: a trailing newline is part
// of it, for both readers alike.
func LoadKeyFile(path string) (*Codec, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the flag key: %w", err)
	}
	return New(key)
}
