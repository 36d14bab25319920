package platformauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/golang-jwt/jwt/v5"

	"github.com/challenge-operator/challenge-operator/internal/token"
)

var (
	now  = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	keys = token.Keys{"p1": []byte(strings.Repeat("a", 32)), "p2": []byte(strings.Repeat("b", 32))}
)

// The request every case is signed for, unless it says otherwise.
const (
	method = "POST"
	path   = "/api/platform/solved?team=team-blue"
	jti    = "0123456789abcdef-jti"
)

var body = []byte(`{"challenge":"web-1","flag":"CTF{body-secret-7f3a}"}`)

func mustSign(t testing.TB, kid, jti, method, path string, body []byte, at time.Time, lifetime time.Duration) string {
	t.Helper()
	raw, err := Sign(keys[kid], kid, jti, method, path, body, at, lifetime)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// forge signs any claims with any method and key, as an attacker or a
// careless platform would.
func forge(t *testing.T, m jwt.SigningMethod, key any, kid string, c jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	raw, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// confused is a token whose header says RS256 but whose signature is an
// HMAC with the platform key: the algorithm-confusion attack.
func confused(t *testing.T, c claims) string {
	t.Helper()
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "p1"})
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, keys["p1"])
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}

// valid are the claims Sign writes for the request at now.
func valid() claims {
	return claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Audience:  jwt.ClaimStrings{Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)),
			ID:        jti,
		},
		Req: RequestDigest(method, path, body),
	}
}

func with(mutate func(*claims)) claims {
	c := valid()
	mutate(&c)
	return c
}

func TestVerify(t *testing.T) {
	hs := func(c claims) string { return forge(t, jwt.SigningMethodHS256, keys["p1"], "p1", c) }
	signed := mustSign(t, "p1", jti, method, path, body, now, time.Minute)
	parts := strings.Split(signed, ".")
	otherReq, _ := json.Marshal(with(func(c *claims) { c.Req = RequestDigest(method, path, []byte("{}")) }))
	teamKeys := token.Keys{"p1": keys["p1"]} // an admin reused the platform key for teams
	teamToken, err := token.Mint(teamKeys, "p1", "team-blue", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	teamTokenForPlatform, err := token.MintFor(teamKeys, "p1", "team-blue", Audience, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		raw         string
		maxLifetime time.Duration
		// The request the token arrives with; the signed one when empty.
		method, path string
		body         []byte
		want         error
	}{
		{name: "a signed call", raw: signed},
		{name: "a call signed with the second key", raw: mustSign(t, "p2", jti, method, path, body, now, time.Minute)},
		{name: "the claims Sign writes, signed by hand", raw: hs(valid())},
		{name: "issued within the leeway ahead", raw: mustSign(t, "p1", jti, method, path, body, now.Add(Leeway), time.Minute)},
		{name: "a second before its expiry", raw: mustSign(t, "p1", jti, method, path, body, now.Add(-time.Minute+time.Second), time.Minute)},
		{name: "the longest lifetime", raw: mustSign(t, "p1", jti, method, path, body, now, DefaultMaxLifetime)},
		{name: "a longer lifetime the verifier allows", raw: mustSign(t, "p1", jti, method, path, body, now, 5*time.Minute), maxLifetime: 5 * time.Minute},
		{name: "the shortest jti", raw: mustSign(t, "p1", strings.Repeat("j", MinJTILength), method, path, body, now, time.Minute)},
		{name: "the longest jti", raw: mustSign(t, "p1", strings.Repeat("j", MaxJTILength), method, path, body, now, time.Minute)},
		{name: "an empty body", raw: mustSign(t, "p1", jti, "GET", "/api/platform/flag", nil, now, time.Minute), method: "GET", path: "/api/platform/flag", body: []byte{}},

		{name: "signed with another key", raw: forge(t, jwt.SigningMethodHS256, []byte(strings.Repeat("c", 32)), "p1", valid()), want: ErrSignature},
		{name: "signed with the other key id's key", raw: forge(t, jwt.SigningMethodHS256, keys["p2"], "p1", valid()), want: ErrSignature},
		{name: "payload swapped under the signature", raw: parts[0] + "." + base64.RawURLEncoding.EncodeToString(otherReq) + "." + parts[2], want: ErrSignature},
		{name: "signature stripped", raw: parts[0] + "." + parts[1] + ".", want: ErrSignature},
		{name: "alg none", raw: forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "p1", valid()), want: ErrSignature},
		{name: "HS512", raw: forge(t, jwt.SigningMethodHS512, keys["p1"], "p1", valid()), want: ErrSignature},
		{name: "RS256 header over an HMAC", raw: confused(t, valid()), want: ErrSignature},
		{name: "unknown key id", raw: forge(t, jwt.SigningMethodHS256, keys["p1"], "p9", valid()), want: ErrUnknownKey},
		{name: "no key id", raw: forge(t, jwt.SigningMethodHS256, keys["p1"], "", valid()), want: ErrUnknownKey},

		{name: "a team token signed with the same key", raw: teamToken, want: ErrAudience},
		{name: "a team token for the platform audience", raw: teamTokenForPlatform, want: ErrSubject},
		{name: "a platform token with a subject", raw: hs(with(func(c *claims) { c.Subject = "ctfd" })), want: ErrSubject},
		{name: "no audience", raw: hs(with(func(c *claims) { c.Audience = nil })), want: ErrAudience},
		{name: "the team audience", raw: hs(with(func(c *claims) { c.Audience = jwt.ClaimStrings{token.Audience} })), want: ErrAudience},
		{name: "two audiences", raw: hs(with(func(c *claims) { c.Audience = jwt.ClaimStrings{Audience, token.Audience} })), want: ErrAudience},

		{name: "another body", raw: signed, body: []byte(`{"challenge":"web-1","flag":"CTF{other}"}`), want: ErrRequestMismatch},
		{name: "no body", raw: signed, body: []byte{}, want: ErrRequestMismatch},
		{name: "another path", raw: signed, path: "/api/platform/flag?team=team-blue", want: ErrRequestMismatch},
		{name: "another query", raw: signed, path: "/api/platform/solved?team=team-red", want: ErrRequestMismatch},
		{name: "another method", raw: signed, method: "PUT", want: ErrRequestMismatch},
		{name: "no request digest", raw: hs(with(func(c *claims) { c.Req = "" })), want: ErrRequestMismatch},
		{name: "the digest in upper case", raw: hs(with(func(c *claims) { c.Req = strings.ToUpper(c.Req) })), want: ErrRequestMismatch},

		{name: "expired", raw: mustSign(t, "p1", jti, method, path, body, now.Add(-3*time.Minute), 2*time.Minute), want: ErrExpired},
		{name: "at its expiry", raw: mustSign(t, "p1", jti, method, path, body, now.Add(-time.Minute), time.Minute), want: ErrExpired},
		{name: "valid too long", raw: mustSign(t, "p1", jti, method, path, body, now, DefaultMaxLifetime+time.Second), want: ErrLifetime},
		{name: "valid a day", raw: mustSign(t, "p1", jti, method, path, body, now, 24*time.Hour), maxLifetime: 5 * time.Minute, want: ErrLifetime},
		{name: "no expiry", raw: hs(with(func(c *claims) { c.ExpiresAt = nil })), want: ErrLifetime},
		{name: "no issue time", raw: hs(with(func(c *claims) { c.IssuedAt = nil })), want: ErrLifetime},
		{name: "expires as issued", raw: hs(with(func(c *claims) { c.ExpiresAt = c.IssuedAt })), want: ErrLifetime},
		{name: "issued beyond the leeway ahead", raw: mustSign(t, "p1", jti, method, path, body, now.Add(Leeway+time.Second), time.Minute), want: ErrNotYetValid},
		{name: "not before a minute from now", raw: hs(with(func(c *claims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Minute)) })), want: ErrNotYetValid},

		{name: "no jti", raw: hs(with(func(c *claims) { c.ID = "" })), want: ErrJTI},
		{name: "a short jti", raw: hs(with(func(c *claims) { c.ID = strings.Repeat("j", MinJTILength-1) })), want: ErrJTI},
		{name: "a long jti", raw: hs(with(func(c *claims) { c.ID = strings.Repeat("j", MaxJTILength+1) })), want: ErrJTI},

		{name: "empty", raw: "", want: ErrMalformed},
		{name: "garbage", raw: "not.a.jwt", want: ErrMalformed},
		{name: "longer than any token of ours", raw: signed + strings.Repeat("A", maxTokenBytes), want: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v := Verifier{Keys: keys, MaxLifetime: tt.maxLifetime, Replays: NewReplayCache(0)}
			m, p, b := cmpOr(tt.method, method), cmpOr(tt.path, path), body
			if tt.body != nil {
				b = tt.body
			}
			err := v.Verify(tt.raw, m, p, b, now)
			if tt.want == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.want))
			for _, sentinel := range sentinels {
				if !errors.Is(sentinel, tt.want) {
					g.Expect(errors.Is(err, sentinel)).To(BeFalse(), "the error wraps %v too", sentinel)
				}
			}
			g.Expect(err.Error()).NotTo(ContainSubstring("CTF{"), "never the body")
			for _, part := range strings.Split(tt.raw, ".") {
				if len(part) >= 8 {
					g.Expect(err.Error()).NotTo(ContainSubstring(part), "never the token")
				}
			}
		})
	}
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

var sentinels = []error{ErrMalformed, ErrUnknownKey, ErrSignature, ErrAudience, ErrSubject, ErrLifetime, ErrExpired,
	ErrNotYetValid, ErrJTI, ErrRequestMismatch, ErrReplayed, ErrReplayCacheFull, ErrNoReplayCache}

func TestUnknownKeyIDIsNamedOnlyQuotedAndShort(t *testing.T) {
	g := NewWithT(t)
	v := Verifier{Keys: keys, Replays: NewReplayCache(0)}
	err := v.Verify(forge(t, jwt.SigningMethodHS256, keys["p1"], "old-key", valid()), method, path, body, now)
	g.Expect(err).To(MatchError(ContainSubstring(`key id "old-key"`)), "a rotation is easier to follow with the key id")
	err = v.Verify(forge(t, jwt.SigningMethodHS256, keys["p1"], "x\n"+strings.Repeat("y", 80), valid()), method, path, body, now)
	g.Expect(err).To(MatchError(ErrUnknownKey))
	g.Expect(err.Error()).NotTo(ContainSubstring("yyy"))
	g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
}

func TestEachTokenIsAcceptedOnce(t *testing.T) {
	g := NewWithT(t)
	v := Verifier{Keys: keys, Replays: NewReplayCache(0)}
	raw := mustSign(t, "p1", jti, method, path, body, now, time.Minute)
	g.Expect(v.Verify(raw, method, path, body, now)).To(Succeed())
	g.Expect(v.Verify(raw, method, path, body, now.Add(time.Second))).To(MatchError(ErrReplayed))
	g.Expect(v.Verify(mustSign(t, "p2", jti, method, path, body, now, time.Minute), method, path, body, now)).
		To(MatchError(ErrReplayed), "a jti is spent whatever key signed it")
	g.Expect(v.Verify(mustSign(t, "p1", NewJTI(), method, path, body, now, time.Minute), method, path, body, now)).
		To(Succeed(), "the same request with a new jti")

	other := Verifier{Keys: keys, Replays: v.Replays, MaxLifetime: time.Hour}
	g.Expect(other.Verify(raw, method, path, body, now)).To(MatchError(ErrReplayed),
		"a Verifier built per call shares its ReplayCache")
}

// TestVerifyCallSaysWhatTheCallIs: an accepted call's id and times, which
// a server of several replicas records and judges by; nothing of a refused
// one.
func TestVerifyCallSaysWhatTheCallIs(t *testing.T) {
	g := NewWithT(t)
	v := Verifier{Keys: keys, Replays: NewReplayCache(0)}
	raw := mustSign(t, "p1", jti, method, path, body, now.Add(-10*time.Second), time.Minute)
	call, err := v.VerifyCall(raw, method, path, body, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(call.ID).To(Equal(jti))
	g.Expect(call.IssuedAt).To(BeTemporally("==", now.Add(-10*time.Second)))
	g.Expect(call.ExpiresAt).To(BeTemporally("==", now.Add(50*time.Second)))
	call, err = v.VerifyCall(raw, method, path, body, now)
	g.Expect(err).To(MatchError(ErrReplayed))
	g.Expect(call).To(BeZero())
}

func TestARefusedCallDoesNotSpendItsToken(t *testing.T) {
	g := NewWithT(t)
	v := Verifier{Keys: keys, Replays: NewReplayCache(0)}
	raw := mustSign(t, "p1", jti, method, path, body, now, time.Minute)
	g.Expect(v.Verify(raw, method, path, []byte(`{"flag":"CTF{guess}"}`), now)).To(MatchError(ErrRequestMismatch))
	g.Expect(v.Replays.Len()).To(BeZero())
	g.Expect(v.Verify(raw, method, path, body, now)).To(Succeed(), "the platform's own call still passes")
}

func TestNoReplayCacheRefusesEveryCall(t *testing.T) {
	v := Verifier{Keys: keys}
	err := v.Verify(mustSign(t, "p1", jti, method, path, body, now, time.Minute), method, path, body, now)
	NewWithT(t).Expect(err).To(MatchError(ErrNoReplayCache))
}

func TestAFullReplayCacheRefusesNewCalls(t *testing.T) {
	g := NewWithT(t)
	v := Verifier{Keys: keys, Replays: NewReplayCache(1)}
	g.Expect(v.Verify(mustSign(t, "p1", NewJTI(), method, path, body, now, time.Minute), method, path, body, now)).To(Succeed())
	err := v.Verify(mustSign(t, "p1", NewJTI(), method, path, body, now, time.Minute), method, path, body, now)
	g.Expect(err).To(MatchError(ErrReplayCacheFull))
	g.Expect(v.Verify(mustSign(t, "p1", NewJTI(), method, path, body, now.Add(time.Minute), time.Minute), method, path, body, now.Add(time.Minute))).
		To(Succeed(), "room again once the first token expired")
}

func TestConcurrentReplaysAcceptOnce(t *testing.T) {
	v := Verifier{Keys: keys, Replays: NewReplayCache(0)}
	raw := mustSign(t, "p1", jti, method, path, body, now, time.Minute)
	const calls = 32
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { errs[i] = v.Verify(raw, method, path, body, now) })
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		switch {
		case err == nil:
			accepted++
		case !errors.Is(err, ErrReplayed):
			t.Errorf("a replay refused for another reason: %v", err)
		}
	}
	if accepted != 1 {
		t.Fatalf("%d of %d concurrent replays accepted, want 1", accepted, calls)
	}
}

func TestReplayCachePrunesExpiredTokens(t *testing.T) {
	g := NewWithT(t)
	c := NewReplayCache(0)
	g.Expect(c.admit("a", now.Add(time.Minute), now)).To(Succeed())
	g.Expect(c.admit("c", now.Add(3*time.Minute), now)).To(Succeed())
	g.Expect(c.admit("b", now.Add(2*time.Minute), now)).To(Succeed())
	g.Expect(c.Len()).To(Equal(3))

	g.Expect(c.admit("d", now.Add(4*time.Minute), now.Add(90*time.Second))).To(Succeed())
	g.Expect(c.expiry).To(HaveLen(3))
	g.Expect(c.expiry).NotTo(HaveKey("a"), "a expired at 1m")
	g.Expect(c.admit("b", now.Add(2*time.Minute), now.Add(90*time.Second))).To(MatchError(ErrReplayed), "b not yet")

	g.Expect(c.admit("e", now.Add(5*time.Minute), now.Add(3*time.Minute))).To(Succeed())
	g.Expect(c.expiry).To(HaveLen(2))
	g.Expect(c.expiry).To(HaveKey("d"))
	g.Expect(c.expiry).To(HaveKey("e"))
	g.Expect(c.queue).To(HaveLen(2), "the queue is pruned with the map")
}

func TestReplayCacheIgnoresAClockSteppingBack(t *testing.T) {
	g := NewWithT(t)
	c := NewReplayCache(0)
	g.Expect(c.admit("x", now.Add(time.Minute), now)).To(Succeed())
	g.Expect(c.admit("y", now.Add(10*time.Minute), now.Add(2*time.Minute))).To(Succeed())
	g.Expect(c.expiry).NotTo(HaveKey("x"), "pruned")
	g.Expect(c.admit("x", now.Add(time.Minute), now.Add(30*time.Second))).To(MatchError(ErrExpired),
		"a pruned jti is not revived by a call verified at an earlier time")
}

func TestReplayCacheEnforcesItsCapacity(t *testing.T) {
	g := NewWithT(t)
	c := NewReplayCache(3)
	for i, exp := range []time.Duration{time.Minute, 2 * time.Minute, 2 * time.Minute} {
		g.Expect(c.admit(fmt.Sprint(i), now.Add(exp), now)).To(Succeed())
	}
	g.Expect(c.admit("3", now.Add(time.Minute), now)).To(MatchError(ErrReplayCacheFull))
	g.Expect(c.admit("0", now.Add(time.Minute), now)).To(MatchError(ErrReplayed), "a replay is still named a replay when full")
	g.Expect(c.Len()).To(Equal(3))
	g.Expect(c.admit("3", now.Add(3*time.Minute), now.Add(time.Minute))).To(Succeed(), "the first expired: room for one")
	g.Expect(c.admit("4", now.Add(3*time.Minute), now.Add(time.Minute))).To(MatchError(ErrReplayCacheFull))
}

func TestZeroReplayCacheHasTheDefaultCapacity(t *testing.T) {
	g := NewWithT(t)
	var c ReplayCache
	for i := range DefaultReplayCapacity {
		if err := c.admit(fmt.Sprint(i), now.Add(time.Minute), now); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	g.Expect(c.admit("one more", now.Add(time.Minute), now)).To(MatchError(ErrReplayCacheFull))
}

func TestRequestDigest(t *testing.T) {
	g := NewWithT(t)
	// Pinned: platforms compute it in their own language, e.g.
	// printf 'POST\n/api/platform/solved?team=team-blue\n{"challenge":"web-1"}' | sha256sum
	g.Expect(RequestDigest("POST", "/api/platform/solved?team=team-blue", []byte(`{"challenge":"web-1"}`))).
		To(Equal("3f6ca042c96696c39c314bb47f01d06dc79f3fe3322f21ac9a0a975da55581ca"))
	g.Expect(RequestDigest("GET", "/", nil)).To(Equal("139fb16fdd19069e75f6f3dd0e619a89fb157dab65e8722c66e6b3fd43f7900c"))
}

func TestSignRefusesWhatNoVerifierTakes(t *testing.T) {
	key := keys["p1"]
	tests := map[string]func() (string, error){
		"a short key":          func() (string, error) { return Sign(key[:31], "p1", jti, method, path, body, now, time.Minute) },
		"a key id not a label": func() (string, error) { return Sign(key, "P_1", jti, method, path, body, now, time.Minute) },
		"no jti":               func() (string, error) { return Sign(key, "p1", "", method, path, body, now, time.Minute) },
		"a short jti":          func() (string, error) { return Sign(key, "p1", "short", method, path, body, now, time.Minute) },
		"no lifetime":          func() (string, error) { return Sign(key, "p1", jti, method, path, body, now, 0) },
		"under a second":       func() (string, error) { return Sign(key, "p1", jti, method, path, body, now, time.Millisecond) },
		"a newline in the path": func() (string, error) {
			return Sign(key, "p1", jti, method, "/a\n/b", body, now, time.Minute)
		},
	}
	for name, sign := range tests {
		t.Run(name, func(t *testing.T) {
			if raw, err := sign(); err == nil {
				t.Fatalf("signed %q", raw)
			}
		})
	}
}

func TestNewJTI(t *testing.T) {
	g := NewWithT(t)
	a, b := NewJTI(), NewJTI()
	g.Expect(checkJTI(a)).To(Succeed())
	g.Expect(a).NotTo(Equal(b))
}

func FuzzVerify(f *testing.F) {
	signed := mustSign(f, "p1", jti, method, path, body, now, time.Minute)
	f.Add(signed, method, path, body)
	f.Add(signed, method, path, []byte("{}"))
	f.Add("eyJhbGciOiJub25lIn0.e30.", "GET", "/", []byte(nil))
	f.Add("not.a.jwt", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, raw, method, path string, body []byte) {
		v := Verifier{Keys: keys, Replays: NewReplayCache(0)}
		err := v.Verify(raw, method, path, body, now)
		if err == nil {
			if raw != signed {
				t.Fatalf("accepted a token no key of ours signed: %q", raw)
			}
			return
		}
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("an error that wraps no sentinel: %v", err)
	})
}

// BenchmarkVerify measures one accepted call: parse, signature, claims,
// request digest (of a flag submission's body) and the replay memory.
func BenchmarkVerify(b *testing.B) {
	raws := make([]string, b.N)
	for i := range raws {
		raws[i] = mustSign(b, "p1", fmt.Sprintf("bench-jti-%016d", i), method, path, body, now, time.Minute)
	}
	v := Verifier{Keys: keys, Replays: NewReplayCache(b.N + 1)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := v.Verify(raws[i], method, path, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
