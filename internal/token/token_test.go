package token

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var (
	now  = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	keys = Keys{"k1": []byte(strings.Repeat("a", 32)), "k2": []byte(strings.Repeat("b", 32))}
)

func TestMintedTokenVerifies(t *testing.T) {
	raw, err := Mint(keys, "k2", "team-blue", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	team, err := Verify(keys, raw, now.Add(59*time.Minute))
	if err != nil || team != "team-blue" {
		t.Fatalf("Verify = %q, %v; want team-blue", team, err)
	}
}

func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	raw, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestEveryBadTokenIsRefused(t *testing.T) {
	valid := jwt.RegisteredClaims{Subject: "team-blue", Audience: jwt.ClaimStrings{Audience},
		NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}
	with := func(mutate func(*jwt.RegisteredClaims)) jwt.RegisteredClaims {
		c := valid
		mutate(&c)
		return c
	}
	good, err := Mint(keys, "k1", "team-blue", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")
	cases := map[string]string{
		"alg none":           sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "k1", valid),
		"HS512":              sign(t, jwt.SigningMethodHS512, keys["k1"], "k1", valid),
		"HS384":              sign(t, jwt.SigningMethodHS384, keys["k1"], "k1", valid),
		"unknown key id":     sign(t, jwt.SigningMethodHS256, keys["k1"], "k9", valid),
		"no key id":          sign(t, jwt.SigningMethodHS256, keys["k1"], "", valid),
		"wrong key":          sign(t, jwt.SigningMethodHS256, []byte(strings.Repeat("c", 32)), "k1", valid),
		"key of another id":  sign(t, jwt.SigningMethodHS256, keys["k2"], "k1", valid),
		"expired":            sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-time.Minute)) })),
		"no expiry":          sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.ExpiresAt = nil })),
		"not yet valid":      sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Minute)) })),
		"other audience":     sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.Audience = jwt.ClaimStrings{"ctfd"} })),
		"subject not a team": sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.Subject = "Team/../x" })),
		"tampered payload":   parts[0] + "." + strings.TrimRight(parts[1], "A") + "B." + parts[2],
		"signature stripped": parts[0] + "." + parts[1] + ".",
		"empty":              "",
		"garbage":            "not.a.jwt",
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			if team, err := Verify(keys, raw, now); err == nil {
				t.Fatalf("Verify accepted it, team %q", team)
			}
		})
	}
}

func TestMintRefusesWhatVerifyWouldRefuse(t *testing.T) {
	if _, err := Mint(keys, "k1", "Team Blue", time.Hour, now); err == nil {
		t.Error("a team that is not a DNS label was minted")
	}
	if _, err := Mint(keys, "", "team-blue", time.Hour, now); err == nil {
		t.Error("with two keys and no key id, a token was minted")
	}
	if _, err := Mint(keys, "k1", "team-blue", 0, now); err == nil {
		t.Error("a token without lifetime was minted")
	}
}
