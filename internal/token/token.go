// Package token mints and verifies the instancer's team tokens: HS256 JSON
// Web Tokens whose subject is the team, signed with a key from a Secret.
package token

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Audience is the audience team tokens name unless the instancer is given
// its own (--audience), so that no other token signed with the same key is
// taken for one.
const Audience = "challenge-operator-instancer"

// DefaultMaxLifetime is the longest a token may be valid (expiry minus issue
// time) unless the instancer says otherwise: a CTF weekend, with margin.
const DefaultMaxLifetime = 7 * 24 * time.Hour

// minKeyBytes is the shortest key accepted: HS256 needs 256 bits of secret.
const minKeyBytes = 32

// Keys are the signing keys by key id (the JWT "kid" header).
type Keys map[string][]byte

// teamPattern is what a team id must be: a DNS label, as spec.participant.
// A key id must be one too: a file of the key volume named otherwise
// (ca.crt, tls.key, a volume's ..data) is never a key.
var teamPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func isLabel(s string) bool { return len(s) <= 63 && teamPattern.MatchString(s) }

// IsTeam reports whether s may be a team id: a DNS label, as spec.participant.
func IsTeam(s string) bool { return isLabel(s) }

// Why an entry of a key Secret or directory is not a key.
const (
	// SkipName: the entry is not named as a key id (a DNS label).
	SkipName = "name"
	// SkipShort: the key has fewer than 32 bytes.
	SkipShort = "short"
	// SkipUnreadable: the file could not be read.
	SkipUnreadable = "unreadable"
	// SkipInvalid: a revocation that does not hold a time.
	SkipInvalid = "invalid"
)

// Skipped is an entry that was not taken, and why.
type Skipped struct {
	Name   string
	Reason string
	Err    error
}

func (s Skipped) Error() string {
	switch s.Reason {
	case SkipName:
		return fmt.Sprintf("%q is not a key id (a DNS label)", s.Name)
	case SkipShort:
		return fmt.Sprintf("key %q is shorter than %d bytes (HS256 needs them)", s.Name, minKeyBytes)
	default:
		return fmt.Sprintf("%q: %v", s.Name, s.Err)
	}
}

// Load returns the keys among data (key id -> key): every entry named as a
// key id and holding at least 32 bytes; the others are skipped, each with
// why, sorted by name.
func Load(data map[string][]byte) (Keys, []Skipped) {
	keys := Keys{}
	var skipped []Skipped
	for kid, key := range data {
		switch {
		case !isLabel(kid):
			skipped = append(skipped, Skipped{Name: kid, Reason: SkipName})
		case len(key) < minKeyBytes:
			skipped = append(skipped, Skipped{Name: kid, Reason: SkipShort})
		default:
			keys[kid] = key
		}
	}
	sort.Slice(skipped, func(i, j int) bool { return skipped[i].Name < skipped[j].Name })
	return keys, skipped
}

// LoadDir reads the keys of a Secret mounted as a volume by Load's rules:
// each regular file is an entry, its name the key id. The volume's own
// dot-entries and directories are not looked at. It fails only when dir
// cannot be read; the keys in force are then none.
func LoadDir(dir string) (Keys, []Skipped, error) {
	data, skipped, err := readDir(dir)
	if err != nil {
		return Keys{}, nil, fmt.Errorf("reading token keys: %w", err)
	}
	keys, bad := Load(data)
	return keys, append(skipped, bad...), nil
}

// readDir reads the regular files of dir but its dot-entries.
func readDir(dir string) (map[string][]byte, []Skipped, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	data := map[string][]byte{}
	var skipped []Skipped
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
			continue // the volume's symlinks to directories, or a file gone meanwhile
		}
		content, err := os.ReadFile(path)
		if err != nil {
			skipped = append(skipped, Skipped{Name: e.Name(), Reason: SkipUnreadable, Err: err})
			continue
		}
		data[e.Name()] = content
	}
	return data, skipped, nil
}

// KeysFromDir is LoadDir for a command that needs a key: an error when there
// is none.
func KeysFromDir(dir string) (Keys, error) {
	keys, skipped, err := LoadDir(dir)
	if err != nil {
		return nil, err
	}
	return atLeastOne(dir, keys, skipped)
}

// KeysFromSecret reads the keys of a Secret by Load's rules: each data
// entry is a key, its name the key id. It fails when there is none.
func KeysFromSecret(secret *corev1.Secret) (Keys, error) {
	keys, skipped := Load(secret.Data)
	return atLeastOne("Secret "+secret.Namespace+"/"+secret.Name, keys, skipped)
}

func atLeastOne(source string, keys Keys, skipped []Skipped) (Keys, error) {
	if len(keys) > 0 {
		return keys, nil
	}
	errs := []error{fmt.Errorf("no valid token key in %s", source)}
	for _, s := range skipped {
		errs = append(errs, s)
	}
	return nil, errors.Join(errs...)
}

// ReadKeys reads the keys of the Secret named key.
func ReadKeys(ctx context.Context, r client.Reader, key client.ObjectKey) (Keys, error) {
	secret := &corev1.Secret{}
	if err := r.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("reading the token key Secret %s: %w", key, err)
	}
	return KeysFromSecret(secret)
}

// RevokeAll is the revocation time of a revocation entry that holds no
// time: every token of that team is refused until it is fixed.
var RevokeAll = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// LoadRevocations reads a ConfigMap mounted as a volume: each regular file
// is named as a team id and holds a time (RFC 3339); that team's tokens
// issued before it are refused. A file that holds no time revokes every
// token of its team (RevokeAll) and is reported; a file not named as a team
// id is skipped.
func LoadRevocations(dir string) (map[string]time.Time, []Skipped, error) {
	data, skipped, err := readDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading token revocations: %w", err)
	}
	revoked := map[string]time.Time{}
	for team, content := range data {
		if !isLabel(team) {
			skipped = append(skipped, Skipped{Name: team, Reason: SkipName})
			continue
		}
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(string(content)))
		if err != nil {
			at = RevokeAll
			skipped = append(skipped, Skipped{Name: team, Reason: SkipInvalid, Err: fmt.Errorf("not an RFC 3339 time, so every token of the team is refused: %w", err)})
		}
		revoked[team] = at
	}
	sort.Slice(skipped, func(i, j int) bool { return skipped[i].Name < skipped[j].Name })
	return revoked, skipped, nil
}

// KeyID picks the key to sign with: kid when given, else the only key.
func (k Keys) KeyID(kid string) (string, error) {
	if kid != "" {
		if _, ok := k[kid]; !ok {
			return "", fmt.Errorf("no key %q", kid)
		}
		return kid, nil
	}
	if len(k) != 1 {
		ids := make([]string, 0, len(k))
		for id := range k {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return "", fmt.Errorf("several keys (%v): name one", ids)
	}
	for id := range k {
		return id, nil
	}
	return "", errors.New("no key")
}

// Mint signs a token for team with the default audience, valid from now for
// ttl, with key kid.
func Mint(keys Keys, kid, team string, ttl time.Duration, now time.Time) (string, error) {
	return MintFor(keys, kid, team, Audience, ttl, now)
}

// MintFor signs a token for team and the instancer of audience, valid from
// now for ttl, with key kid.
func MintFor(keys Keys, kid, team, audience string, ttl time.Duration, now time.Time) (string, error) {
	if !isLabel(team) {
		return "", fmt.Errorf("team %q: want a DNS label (lower-case letters, digits and '-', at most 63)", team)
	}
	if ttl <= 0 {
		return "", fmt.Errorf("ttl %s: want a positive duration", ttl)
	}
	if audience == "" {
		return "", errors.New("no audience")
	}
	kid, err := keys.KeyID(kid)
	if err != nil {
		return "", err
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Subject:   team,
		Audience:  jwt.ClaimStrings{audience},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	})
	t.Header["kid"] = kid
	return t.SignedString(keys[kid])
}

// Verifier checks team tokens for one instancer.
type Verifier struct {
	Keys Keys
	// Audience the tokens must name; the constant Audience when empty.
	Audience string
	// MaxLifetime is the longest expiry minus issue time accepted;
	// DefaultMaxLifetime when zero.
	MaxLifetime time.Duration
	// Revoked maps a team to the time before which its tokens were
	// revoked; nil revokes none.
	Revoked map[string]time.Time
}

// Verify returns the team of a valid token with the default audience and
// lifetime, and no revocation.
func Verify(keys Keys, raw string, now time.Time) (team string, err error) {
	return Verifier{Keys: keys}.Verify(raw, now)
}

// Verify returns the team of a valid token. It refuses every algorithm but
// HS256 (so "none" too), a key id it does not hold, a missing or past
// expiry, a missing or future issue time, a lifetime beyond MaxLifetime, a
// future not-before, another audience, a subject that is not a team id,
// and a token issued before its team's revocation.
func (v Verifier) Verify(raw string, now time.Time) (team string, err error) {
	audience := cmp.Or(v.Audience, Audience)
	maxLifetime := cmp.Or(v.MaxLifetime, DefaultMaxLifetime)
	claims := &jwt.RegisteredClaims{}
	_, err = jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key, ok := v.Keys[kid]
		if !ok {
			return nil, fmt.Errorf("unknown key %q", kid)
		}
		return key, nil
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithAudience(audience),
		jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithLeeway(5*time.Second),
	)
	switch {
	case err != nil:
		return "", err
	case claims.IssuedAt == nil:
		return "", errors.New("the token has no issue time")
	case claims.ExpiresAt.Sub(claims.IssuedAt.Time) > maxLifetime:
		return "", fmt.Errorf("the token is valid for %s, longer than %s", claims.ExpiresAt.Sub(claims.IssuedAt.Time), maxLifetime)
	case !isLabel(claims.Subject):
		return "", fmt.Errorf("subject %q is not a team id", claims.Subject)
	}
	if at, ok := v.Revoked[claims.Subject]; ok && claims.IssuedAt.Before(at) {
		return "", fmt.Errorf("team %s's tokens issued before %s are revoked", claims.Subject, at.Format(time.RFC3339))
	}
	return claims.Subject, nil
}
