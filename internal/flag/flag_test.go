package flag

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDerive(t *testing.T) {
	g := NewWithT(t)
	key := []byte("organiser-secret")
	a := Derive(key, "web-intro", "team-1", "CTF{%s}", 32)
	g.Expect(a).To(MatchRegexp(`^CTF\{[0-9a-f]{32}\}$`))
	g.Expect(Derive(key, "web-intro", "team-1", "CTF{%s}", 32)).To(Equal(a), "stable")
	g.Expect(Derive(key, "web-intro", "team-2", "CTF{%s}", 32)).NotTo(Equal(a), "per participant")
	g.Expect(Derive(key, "pwn-1", "team-1", "CTF{%s}", 32)).NotTo(Equal(a), "per challenge")
	g.Expect(Derive([]byte("other"), "web-intro", "team-1", "CTF{%s}", 32)).NotTo(Equal(a), "per key")
	g.Expect(Derive(key, "ab", "c", "%s", 64)).NotTo(Equal(Derive(key, "a", "bc", "%s", 64)), "separated inputs")

	// What a platform does to verify a submission.
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("web-intro\x00team-1"))
	g.Expect(a).To(Equal("CTF{" + hex.EncodeToString(mac.Sum(nil))[:32] + "}"))
}
