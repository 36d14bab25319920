package ctfflag

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

func TestNotOrganisers(t *testing.T) {
	marked := map[string]string{ctfv1alpha1.OrganiserSecretLabel: "true"}
	tests := []struct {
		name    string
		secret  corev1.Secret
		problem string
	}{
		{"marked Opaque", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: marked}, Type: corev1.SecretTypeOpaque}, ""},
		{"marked, type left empty", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: marked}}, ""},
		{"unmarked", corev1.Secret{}, "not marked"},
		{"marked false", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ctfv1alpha1.OrganiserSecretLabel: "false"}}}, "not marked"},
		{"a ServiceAccount token", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: marked}, Type: corev1.SecretTypeServiceAccountToken}, "not Opaque"},
		{"a Helm release", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: marked}, Type: "helm.sh/release.v1"}, "not Opaque"},
		{"an instance's", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			ctfv1alpha1.OrganiserSecretLabel: "true", ctfv1alpha1.InstanceLabel: "web-team-1"}}}, "belongs to an instance"},
		{"owned by a Challenge", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: marked, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "ctf.challenge-operator.io/v1alpha1", Kind: "Challenge", Name: "web-team-1"}}}}, "belongs to an instance"},
		{"owned by something else", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: marked, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "example.com/v1", Kind: "Challenge", Name: "x"}}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NotOrganisers(&tt.secret)
			if tt.problem == "" {
				NewWithT(t).Expect(got).To(BeEmpty())
				return
			}
			NewWithT(t).Expect(got).To(ContainSubstring(tt.problem))
		})
	}
}
