package proofofwork

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	altcha "github.com/altcha-org/altcha-lib-go"
	. "github.com/onsi/gomega"
)

var (
	key     = []byte("a proof of work key, thirty-two bytes or more")
	purpose = Purpose{Team: "blue", Template: "web", Action: "start"}
	issued  = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// expires is the parameter of a challenge issued then.
	expires = "expires=" + strconv.FormatInt(issued.Add(Lifetime).Unix(), 10)
)

// solved issues a challenge for p at issued and solves it.
func solved(t *testing.T, p Purpose) (Challenge, string) {
	t.Helper()
	c, err := New(key, p, 1000, issued)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := Solve(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, payload
}

// edited re-encodes payload after edit.
func edited(t *testing.T, payload string, edit func(*altcha.Payload)) string {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	var p altcha.Payload
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	edit(&p)
	data, err = json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(data)
}

func TestNewBindsThePurposeAndExpiry(t *testing.T) {
	g := NewWithT(t)
	c, err := New(key, purpose, 50_000, issued)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Algorithm).To(Equal("SHA-256"))
	g.Expect(c.MaxNumber).To(BeEquivalentTo(50_000))
	g.Expect(c.ExpiresAt).To(Equal(issued.Add(Lifetime)))
	params := altcha.ExtractParams(altcha.Payload{Salt: c.Salt})
	g.Expect(params.Get("team")).To(Equal("blue"))
	g.Expect(params.Get("template")).To(Equal("web"))
	g.Expect(params.Get("action")).To(Equal("start"))
	g.Expect("expires=" + params.Get("expires")).To(Equal(expires))
	g.Expect(c.Salt).To(HaveSuffix("&"), "ALTCHA's delimiter: no parameter is spliced onto the number")
	other, err := New(key, purpose, 50_000, issued)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Salt).NotTo(Equal(c.Salt), "a random salt each time")
}

func TestVerify(t *testing.T) {
	c, payload := solved(t, purpose)
	wrongNumber, err := Encode(c, numberOf(t, payload)+1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		key     []byte
		payload string
		purpose Purpose
		at      time.Time
		want    error
	}{
		{"right", key, payload, purpose, issued.Add(time.Second), nil},
		{"right until it expires", key, payload, purpose, issued.Add(Lifetime - time.Second), nil},
		{"expired", key, payload, purpose, issued.Add(Lifetime), ErrExpired},
		{"a wrong number", key, wrongNumber, purpose, issued, ErrWrong},
		{"another key", []byte("another key of thirty-two bytes or more"), payload, purpose, issued, ErrWrong},
		{"another team", key, payload, Purpose{"red", "web", "start"}, issued, ErrPurpose},
		{"another template", key, payload, Purpose{"blue", "pwn", "start"}, issued, ErrPurpose},
		{"another action", key, payload, Purpose{"blue", "web", "renew"}, issued, ErrPurpose},
		{"the salt says another team", key, edited(t, payload, func(p *altcha.Payload) {
			p.Salt = strings.Replace(p.Salt, "team=blue", "team=red", 1)
		}), Purpose{"red", "web", "start"}, issued, ErrWrong},
		{"a later expiry", key, edited(t, payload, func(p *altcha.Payload) {
			later := "expires=" + strconv.FormatInt(issued.Add(time.Hour).Unix(), 10)
			g := NewWithT(t)
			g.Expect(p.Salt).To(ContainSubstring(expires))
			p.Salt = strings.Replace(p.Salt, expires, later, 1)
		}), purpose, issued, ErrWrong},
		{"its own challenge hash", key, edited(t, payload, func(p *altcha.Payload) { p.Challenge = strings.Repeat("0", 64) }), purpose, issued, ErrWrong},
		{"SHA-1", key, edited(t, payload, func(p *altcha.Payload) { p.Algorithm = "SHA-1" }), purpose, issued, ErrMalformed},
		{"not base64", key, "not base64!", purpose, issued, ErrMalformed},
		{"not JSON", key, base64.StdEncoding.EncodeToString([]byte("[1]")), purpose, issued, ErrMalformed},
		{"too long", key, strings.Repeat("A", maxPayload+4), purpose, issued, ErrMalformed},
		{"empty", key, "", purpose, issued, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var v Verifier
			if tt.want == nil {
				g.Expect(v.Verify(tt.key, tt.payload, tt.purpose, tt.at)).To(Succeed())
				return
			}
			g.Expect(v.Verify(tt.key, tt.payload, tt.purpose, tt.at)).To(MatchError(tt.want))
		})
	}
}

// TestASolutionIsTakenOnce: again, and written otherwise (a digit of the
// number moved to the end of the salt hashes the same); a refusal for
// another purpose takes nothing.
func TestASolutionIsTakenOnce(t *testing.T) {
	g := NewWithT(t)
	_, payload := solved(t, purpose)
	for digits := ""; len(digits) < 2 || digits[1] == '0'; {
		_, payload = solved(t, purpose)
		digits = strconv.FormatInt(numberOf(t, payload), 10)
	}
	var v Verifier
	g.Expect(v.Verify(key, payload, purpose, issued)).To(Succeed())
	g.Expect(v.Verify(key, payload, purpose, issued.Add(time.Minute))).To(MatchError(ErrReplayed))
	shifted := edited(t, payload, func(p *altcha.Payload) {
		digits := strconv.FormatInt(p.Number, 10)
		p.Salt += digits[:1]
		p.Number, _ = strconv.ParseInt(digits[1:], 10, 64)
	})
	g.Expect(v.Verify(key, shifted, purpose, issued)).NotTo(Succeed(), "the same solution, written otherwise")

	_, another := solved(t, purpose)
	g.Expect(v.Verify(key, another, Purpose{"red", "web", "start"}, issued)).To(MatchError(ErrPurpose))
	g.Expect(v.Verify(key, another, purpose, issued)).To(Succeed(), "a refusal for another purpose did not take it")
}

func numberOf(t *testing.T, payload string) int64 {
	var n int64
	edited(t, payload, func(p *altcha.Payload) { n = p.Number })
	return n
}

// TestUsedSolutionsAreBounded: past maxUsed the oldest is forgotten; those
// whose challenge expired are forgotten on the way.
func TestUsedSolutionsAreBounded(t *testing.T) {
	g := NewWithT(t)
	var v Verifier
	at := issued
	for i := range maxUsed {
		var sig [32]byte
		sig[0], sig[1], sig[2] = byte(i), byte(i>>8), byte(i>>16)
		g.Expect(v.take(sig, at)).To(Succeed())
	}
	g.Expect(v.used).To(HaveLen(maxUsed))
	oldest := [32]byte{}
	g.Expect(v.take(oldest, at)).To(MatchError(ErrReplayed))
	g.Expect(v.take([32]byte{0xff, 0xff, 0xff}, at)).To(Succeed(), "a new one pushes the oldest out")
	g.Expect(v.used).To(HaveLen(maxUsed))
	g.Expect(v.take(oldest, at)).To(Succeed(), "the oldest was forgotten")

	g.Expect(v.take([32]byte{0xfe, 0xff, 0xff}, at.Add(Lifetime+leeway))).To(Succeed())
	g.Expect(v.used).To(HaveLen(1), "every other one outlived its challenge")
}

// BenchmarkVerify is the cost of checking a fresh solution.
func BenchmarkVerify(b *testing.B) {
	const n = 512
	payloads := make([]string, n)
	for i := range payloads {
		c, err := New(key, purpose, 1000, issued)
		if err != nil {
			b.Fatal(err)
		}
		if payloads[i], err = Solve(c); err != nil {
			b.Fatal(err)
		}
	}
	v := &Verifier{}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%n == 0 {
			v = &Verifier{}
		}
		if err := v.Verify(key, payloads[i%n], purpose, issued); err != nil {
			b.Fatal(err)
		}
	}
}
