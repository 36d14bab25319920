// Package token mints and verifies the instancer's team tokens: HS256 JSON
// Web Tokens whose subject is the team, signed with a key from a Secret.
package token

import (
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

// Audience is the audience every team token names, so that no other token
// signed with the same key is taken for one.
const Audience = "challenge-operator-instancer"

// minKeyBytes is the shortest key accepted: HS256 needs 256 bits of secret.
const minKeyBytes = 32

// Keys are the signing keys by key id (the JWT "kid" header).
type Keys map[string][]byte

// teamPattern is what a team id must be: a DNS label, as spec.participant.
var teamPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// KeysFromSecret reads the keys of a Secret: each data entry is a key, its
// name the key id.
func KeysFromSecret(secret *corev1.Secret) (Keys, error) {
	return keysFrom("Secret "+secret.Namespace+"/"+secret.Name, secret.Data)
}

// keysFrom takes the keys of data (key id -> key) read from source,
// refusing keys shorter than 32 bytes.
func keysFrom(source string, data map[string][]byte) (Keys, error) {
	keys := Keys{}
	for kid, key := range data {
		if len(key) < minKeyBytes {
			return nil, fmt.Errorf("key %q in %s is %d bytes: HS256 needs at least %d", kid, source, len(key), minKeyBytes)
		}
		keys[kid] = key
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no token key in %s", source)
	}
	return keys, nil
}

// KeysFromDir reads the keys of a Secret mounted as a volume: each file is a
// key, its name the key id (the volume's dot-entries are skipped).
func KeysFromDir(dir string) (Keys, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading token keys: %w", err)
	}
	data := map[string][]byte{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
			continue // the volume's symlinks to directories, or a file gone meanwhile
		}
		key, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		data[e.Name()] = key
	}
	return keysFrom(dir, data)
}

// ReadKeys reads the keys of the Secret named key.
func ReadKeys(ctx context.Context, r client.Reader, key client.ObjectKey) (Keys, error) {
	secret := &corev1.Secret{}
	if err := r.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("reading the token key Secret %s: %w", key, err)
	}
	return KeysFromSecret(secret)
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

// Mint signs a token for team, valid from now for ttl, with key kid.
func Mint(keys Keys, kid, team string, ttl time.Duration, now time.Time) (string, error) {
	if !teamPattern.MatchString(team) || len(team) > 63 {
		return "", fmt.Errorf("team %q: want a DNS label (lower-case letters, digits and '-', at most 63)", team)
	}
	if ttl <= 0 {
		return "", fmt.Errorf("ttl %s: want a positive duration", ttl)
	}
	kid, err := keys.KeyID(kid)
	if err != nil {
		return "", err
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Subject:   team,
		Audience:  jwt.ClaimStrings{Audience},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	})
	t.Header["kid"] = kid
	return t.SignedString(keys[kid])
}

// Verify returns the team of a valid token. It refuses every algorithm but
// HS256 (so "none" too), a key id it does not hold, a missing or past
// expiry, a future not-before, another audience and a subject that is not a
// team id.
func Verify(keys Keys, raw string, now time.Time) (team string, err error) {
	claims := &jwt.RegisteredClaims{}
	_, err = jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key, ok := keys[kid]
		if !ok {
			return nil, fmt.Errorf("unknown key %q", kid)
		}
		return key, nil
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithAudience(Audience),
		jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithLeeway(5*time.Second),
	)
	if err != nil {
		return "", err
	}
	if !teamPattern.MatchString(claims.Subject) || len(claims.Subject) > 63 {
		return "", fmt.Errorf("subject %q is not a team id", claims.Subject)
	}
	return claims.Subject, nil
}
