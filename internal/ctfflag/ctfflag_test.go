package ctfflag

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
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

func TestCheckRefusesWhatTheChartCannotRenderWithoutShowingIt(t *testing.T) {
	ref := &ctfv1alpha1.SecretKeyRef{Namespace: "ctf", Name: "flags", Key: "web"}
	tests := []struct {
		name, value, problem string
	}{
		{"plain", "CTF{fine}", ""},
		{"unicode", "CTF{ünïcødé ✓}", ""},
		{"trailing newline", "CTF{secret-1}\n", "line break"},
		{"carriage return", "CTF{secret-2}\r", "line break"},
		{"NUL", "CTF{secret-3}\x00", "control character"},
		{"line separator", "CTF{secret-4}\u2028", "line break"},
		{"not UTF-8", "CTF{secret-5}\xff", "not UTF-8"},
		{"too long", strings.Repeat("s", MaxLength+1), "longer than 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Check(tt.value, ref)
			if tt.problem == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonFlagInvalid)).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring(`Secret ctf/flags key "web"`))
			g.Expect(err.Error()).To(ContainSubstring(tt.problem))
			g.Expect(err.Error()).NotTo(ContainSubstring("secret-"), "never the value")
			g.Expect(err.Error()).NotTo(ContainSubstring("sss"), "never the value")
		})
	}
}
