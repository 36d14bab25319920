package token

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

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
	valid := jwt.RegisteredClaims{Subject: "team-blue", Audience: jwt.ClaimStrings{Audience}, IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)),
		NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}
	if _, err := Verify(keys, sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", valid), now); err != nil {
		t.Fatalf("the valid claims are refused: %v", err)
	}
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
		"alg none":          sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "k1", valid),
		"HS512":             sign(t, jwt.SigningMethodHS512, keys["k1"], "k1", valid),
		"HS384":             sign(t, jwt.SigningMethodHS384, keys["k1"], "k1", valid),
		"unknown key id":    sign(t, jwt.SigningMethodHS256, keys["k1"], "k9", valid),
		"no key id":         sign(t, jwt.SigningMethodHS256, keys["k1"], "", valid),
		"wrong key":         sign(t, jwt.SigningMethodHS256, []byte(strings.Repeat("c", 32)), "k1", valid),
		"key of another id": sign(t, jwt.SigningMethodHS256, keys["k2"], "k1", valid),
		"expired":           sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-time.Minute)) })),
		"no expiry":         sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.ExpiresAt = nil })),
		"not yet valid":     sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Minute)) })),
		"other audience":    sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.Audience = jwt.ClaimStrings{"ctfd"} })),
		"no issue time":     sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) { c.IssuedAt = nil })),
		"issued in the future": sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) {
			c.IssuedAt = jwt.NewNumericDate(now.Add(time.Hour))
			c.ExpiresAt = jwt.NewNumericDate(now.Add(2 * time.Hour))
		})),
		"valid for ten years": sign(t, jwt.SigningMethodHS256, keys["k1"], "k1", with(func(c *jwt.RegisteredClaims) {
			c.ExpiresAt = jwt.NewNumericDate(now.Add(10 * 365 * 24 * time.Hour))
		})),
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

func TestVerifierAudienceLifetimeAndRevocation(t *testing.T) {
	mint := func(audience string, issued time.Time, ttl time.Duration) string {
		raw, err := MintFor(keys, "k1", "team-blue", audience, ttl, issued)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	tests := []struct {
		name     string
		verifier Verifier
		raw      string
		ok       bool
	}{
		{name: "the default audience by default", raw: mint(Audience, now, time.Hour), ok: true},
		{name: "an instancer's own audience", verifier: Verifier{Audience: "ctf-2026"}, raw: mint("ctf-2026", now, time.Hour), ok: true},
		{name: "another instancer's token", verifier: Verifier{Audience: "ctf-2026"}, raw: mint("ctf-2025", now, time.Hour)},
		{name: "a default-audience token at an instancer of its own", verifier: Verifier{Audience: "ctf-2026"}, raw: mint(Audience, now, time.Hour)},
		{name: "a week by default", raw: mint(Audience, now, DefaultMaxLifetime), ok: true},
		{name: "beyond a week by default", raw: mint(Audience, now, DefaultMaxLifetime+time.Second)},
		{name: "within a shorter maximum", verifier: Verifier{MaxLifetime: 48 * time.Hour}, raw: mint(Audience, now, 48*time.Hour), ok: true},
		{name: "beyond a shorter maximum", verifier: Verifier{MaxLifetime: 48 * time.Hour}, raw: mint(Audience, now, 49*time.Hour)},
		{name: "issued before the team's revocation", verifier: Verifier{Revoked: map[string]time.Time{"team-blue": now}},
			raw: mint(Audience, now.Add(-time.Second), time.Hour)},
		{name: "issued at the team's revocation", verifier: Verifier{Revoked: map[string]time.Time{"team-blue": now}},
			raw: mint(Audience, now, time.Hour), ok: true},
		{name: "another team's revocation", verifier: Verifier{Revoked: map[string]time.Time{"team-red": now}},
			raw: mint(Audience, now.Add(-time.Minute), time.Hour), ok: true},
		{name: "a revocation without a time", verifier: Verifier{Revoked: map[string]time.Time{"team-blue": RevokeAll}},
			raw: mint(Audience, now, time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.verifier.Keys = keys
			team, err := tt.verifier.Verify(tt.raw, now)
			if tt.ok && (err != nil || team != "team-blue") {
				t.Fatalf("Verify = %q, %v; want team-blue", team, err)
			}
			if !tt.ok && err == nil {
				t.Fatal("Verify accepted it")
			}
		})
	}
}

func TestLoadDirTakesExactlyTheValidKeyFiles(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	files := map[string]string{
		"2026":      strings.Repeat("a", 32),
		"next-key":  strings.Repeat("b", 40),
		"short":     "too short",
		"ca.crt":    "-----BEGIN CERTIFICATE-----\n" + strings.Repeat("c", 64),
		"Upper":     strings.Repeat("d", 32),
		"..data":    strings.Repeat("e", 32),
		".hidden":   strings.Repeat("f", 32),
		"under_bar": strings.Repeat("g", 32),
	}
	for name, content := range files {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
	}
	g.Expect(os.Mkdir(filepath.Join(dir, "subdir"), 0o700)).To(Succeed())

	keys, skipped, err := LoadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(Equal(Keys{"2026": []byte(files["2026"]), "next-key": []byte(files["next-key"])}))
	g.Expect(skipped).To(HaveExactElements(
		Skipped{Name: "Upper", Reason: SkipName},
		Skipped{Name: "ca.crt", Reason: SkipName},
		Skipped{Name: "short", Reason: SkipShort},
		Skipped{Name: "under_bar", Reason: SkipName},
	))

	_, err = KeysFromDir(dir)
	g.Expect(err).NotTo(HaveOccurred(), "a bad file beside good keys does not stop a command")
	empty := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(empty, "short"), []byte("x"), 0o600)).To(Succeed())
	keys, skipped, err = LoadDir(empty)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(BeEmpty(), "no valid key: none in force")
	g.Expect(skipped).To(HaveLen(1))
	_, err = KeysFromDir(empty)
	g.Expect(err).To(MatchError(ContainSubstring(`key "short" is shorter than 32 bytes`)))
	g.Expect(err.Error()).NotTo(ContainSubstring("x\""), "never the key itself")
	keys, _, err = LoadDir(filepath.Join(dir, "absent"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(keys).To(BeEmpty())
}

func TestLoadRevocations(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	for name, content := range map[string]string{
		"team-blue": "2026-11-24T18:00:00Z\n",
		"team-red":  "yesterday",
		"not.team":  "2026-11-24T18:00:00Z",
	} {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
	}
	revoked, skipped, err := LoadRevocations(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revoked).To(Equal(map[string]time.Time{
		"team-blue": time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC),
		"team-red":  RevokeAll,
	}), "a revocation without a time revokes every token of its team")
	g.Expect(skipped).To(HaveLen(2))
	g.Expect(skipped[0]).To(HaveField("Name", "not.team"))
	g.Expect(skipped[1]).To(HaveField("Reason", SkipInvalid))
}
