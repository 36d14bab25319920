package flagtag

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

var key = []byte("the organiser's flag key, 32 byt")

func codec(t testing.TB) *Codec {
	c, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVerify: a team's own flag is correct, another team's is that team's,
// anything else is wrong: another challenge's or flag name's, another key's,
// a body altered by one character, cut, lengthened, or made up.
func TestVerify(t *testing.T) {
	c := codec(t)
	mine := c.Body("web", "flag", "team-1")
	theirs := c.Body("web", "flag", "team-2")
	other, err := New([]byte("another organiser's key, 32 byte"))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(s string) string {
		b := []byte(s)
		b[len(b)/2] = map[bool]byte{true: 'a', false: 'b'}[b[len(b)/2] != 'a']
		return string(b)
	}
	for _, tc := range []struct {
		name       string
		body       string
		want       Verdict
		wantOwner  string
		challenge  string
		flagName   string
		submitting string
	}{
		{"its own flag", mine, Correct, "team-1", "web", "flag", "team-1"},
		{"another team's flag", theirs, OtherTeam, "team-2", "web", "flag", "team-1"},
		{"its own flag of another challenge", c.Body("pwn", "flag", "team-1"), Wrong, "", "web", "flag", "team-1"},
		{"its own flag of another name", c.Body("web", "admin", "team-1"), Wrong, "", "web", "flag", "team-1"},
		{"a flag of another key", other.Body("web", "flag", "team-1"), Wrong, "", "web", "flag", "team-1"},
		{"one character changed", flip(mine), Wrong, "", "web", "flag", "team-1"},
		{"cut short", mine[:len(mine)-1], Wrong, "", "web", "flag", "team-1"},
		{"lengthened", mine + "a", Wrong, "", "web", "flag", "team-1"},
		{"upper case", strings.ToUpper(mine), Wrong, "", "web", "flag", "team-1"},
		{"its last character's unused bits set", lastBits(mine), Wrong, "", "web", "flag", "team-1"},
		{"empty", "", Wrong, "", "web", "flag", "team-1"},
		{"not base32", "flag{" + mine + "}", Wrong, "", "web", "flag", "team-1"},
		{"made up of the right length", strings.Repeat("a", len(mine)), Wrong, "", "web", "flag", "team-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v, owner := c.Verify(tc.challenge, tc.flagName, tc.submitting, tc.body)
			g.Expect(v).To(Equal(tc.want), v.String())
			g.Expect(owner).To(Equal(tc.wantOwner))
		})
	}
}

// lastBits spells body's bytes otherwise: its last character with an
// unused bit set, which base32 decoding ignores (found by FuzzVerify).
func lastBits(body string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	last := strings.IndexByte(alphabet, body[len(body)-1])
	return body[:len(body)-1] + string(alphabet[last|1])
}

// TestBodiesAreStableAndDistinct: a team's flag is the same at every render
// and every codec of the key; two teams', challenges' or names' differ, and
// no body shows the team's id or the key.
func TestBodiesAreStableAndDistinct(t *testing.T) {
	g := NewWithT(t)
	c := codec(t)
	g.Expect(c.Body("web", "flag", "team-1")).To(Equal(codec(t).Body("web", "flag", "team-1")))
	seen := map[string]bool{}
	for _, ch := range []string{"web", "pwn"} {
		for _, name := range []string{"flag", "admin"} {
			for _, team := range []string{"team-1", "team-2", "a-much-longer-team-identifier-of-sixty-three-characters-at-most"} {
				b := c.Body(ch, name, team)
				g.Expect(seen[b]).To(BeFalse(), "%s %s %s", ch, name, team)
				seen[b] = true
				g.Expect(b).To(MatchRegexp(`^[a-z2-7]+$`), "letters and digits only")
				g.Expect(b).NotTo(ContainSubstring("team"), "the team's id is sealed")
				g.Expect(b).To(HaveLen(encoding.EncodedLen(nonceSize+len(team)+tagSize)), "the sealed id and its nonce and tag, nothing else")
			}
		}
	}
}

// TestShortKey: a key of fewer than 16 bytes is refused.
func TestShortKey(t *testing.T) {
	_, err := New([]byte("short"))
	NewWithT(t).Expect(err).To(MatchError(ErrShortKey))
}

// FuzzVerify: no submission makes Verify panic, and none but a body the
// codec made is ever accepted as anyone's.
func FuzzVerify(f *testing.F) {
	c := codec(f)
	f.Add(c.Body("web", "flag", "team-1"))
	f.Add("")
	f.Add(strings.Repeat("a", 60))
	f.Fuzz(func(t *testing.T, body string) {
		v, owner := c.Verify("web", "flag", "team-1", body)
		if v != Wrong && c.Body("web", "flag", owner) != body {
			t.Fatalf("accepted %q as %s's, which the codec would write otherwise", body, owner)
		}
	})
}

// BenchmarkVerify: verifications per second of a submitted flag, on one core.
func BenchmarkVerify(b *testing.B) {
	c := codec(b)
	body := c.Body("web", "flag", "team-0042")
	b.ReportAllocs()
	for b.Loop() {
		if v, _ := c.Verify("web", "flag", "team-0042", body); v != Correct {
			b.Fatal(v)
		}
	}
}

// TestStaticDigest: a static flag's digest checks the flag and nothing
// else: not another value, nor the same value under another challenge or
// flag name, nor under another key.
func TestStaticDigest(t *testing.T) {
	c, err := New([]byte("an organiser's flag key"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := New([]byte("another organiser's key"))
	if err != nil {
		t.Fatal(err)
	}
	d := c.StaticDigest("web", "main", "CTF{static}")
	for _, tc := range []struct {
		name                        string
		codec                       *Codec
		challenge, flag, submission string
		want                        bool
	}{
		{"the flag", c, "web", "main", "CTF{static}", true},
		{"another value", c, "web", "main", "CTF{Static}", false},
		{"the value with a newline", c, "web", "main", "CTF{static}\n", false},
		{"another challenge", c, "pwn", "main", "CTF{static}", false},
		{"another flag name", c, "web", "admin", "CTF{static}", false},
		{"another key", other, "web", "main", "CTF{static}", false},
	} {
		if got := tc.codec.VerifyStatic(tc.challenge, tc.flag, tc.submission, d); got != tc.want {
			t.Errorf("%s: VerifyStatic = %v, want %v", tc.name, got, tc.want)
		}
	}
	if strings.Contains(d, "static") || len(d) != 64 {
		t.Errorf("digest %q: want 64 hex characters, nothing of the value", d)
	}
}
