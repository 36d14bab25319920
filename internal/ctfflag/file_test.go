package ctfflag

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestResolveFile: a secret file's content is text of at most 64 KiB, line
// breaks and tabs included; anything the chart's schema would refuse is an
// error naming the field, the Secret and the key, never the value.
func TestResolveFile(t *testing.T) {
	const secretValue = "s3cr3t-never-shown"
	pem := "-----BEGIN KEY-----\n\tabc\r\n-----END KEY-----\n" + secretValue
	data := map[string][]byte{
		"pem": []byte(pem), "binary": []byte(secretValue + "\x00"), "latin1": []byte(secretValue + "\xe9"),
		"max": []byte(strings.Repeat("a", MaxFileLength)), "long": []byte(secretValue + strings.Repeat("a", MaxFileLength)),
	}
	organisers := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ctf-organiser", Name: "tls",
		Labels: map[string]string{ctfv1alpha1.OrganiserSecretLabel: "true"}}, Data: data}
	unmarked := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ctf-organiser", Name: "other"}, Data: data}
	secrets := organisersecret.Reader{Client: fake.NewClientBuilder().WithObjects(organisers, unmarked).Build(), Namespaces: []string{"ctf-organiser"}}
	tmpl := builders.BareTemplate("web")
	for _, tt := range []struct {
		name, secret, key string
		reason, problem   string // "" reads it
	}{
		{"text with line breaks and a tab", "tls", "pem", "", ""},
		{"64 KiB", "tls", "max", "", ""},
		{"a NUL byte", "tls", "binary", lifecycle.ReasonSecretFileInvalid, "has a control character"},
		{"not UTF-8", "tls", "latin1", lifecycle.ReasonSecretFileInvalid, "is not UTF-8 text"},
		{"over 64 KiB", "tls", "long", lifecycle.ReasonSecretFileInvalid, "is longer than 65536 bytes"},
		{"a Secret not marked as the organiser's", "other", "pem", lifecycle.ReasonPolicyViolation, "is not marked as the organiser's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ref := &ctfv1alpha1.SecretKeyRef{Namespace: "ctf-organiser", Name: tt.secret, Key: tt.key}
			got, err := ResolveFile(context.Background(), secrets, tmpl, "spec.secretFiles[0] (/etc/key.pem)", ref)
			if tt.reason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(string(data[tt.key])))
				return
			}
			g.Expect(lifecycle.IsReason(err, tt.reason)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.problem))
			g.Expect(err.Error()).To(ContainSubstring("ctf-organiser/" + tt.secret))
			g.Expect(err.Error()).NotTo(ContainSubstring(secretValue))
			if tt.reason == lifecycle.ReasonSecretFileInvalid {
				g.Expect(err.Error()).To(ContainSubstring(`spec.secretFiles[0] (/etc/key.pem): Secret ctf-organiser/tls key "` + tt.key + `"`))
			}
		})
	}
}
