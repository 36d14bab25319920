package organisersecret

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

var tmpl = builders.BareTemplate("web-intro")

func TestAllow(t *testing.T) {
	tests := []struct {
		name      string
		allowed   Namespaces
		namespace string
		refused   string
	}{
		{"listed", Namespaces{"a", "ctf-organiser"}, "ctf-organiser", ""},
		{"not listed", Namespaces{"a", "b"}, "kube-system", `reads secretEnv TOKEN from namespace "kube-system"; allowed: a, b`},
		{"nothing listed", nil, "ctf-organiser", "allowed: none"},
		{"no namespace is not a namespace listed", Namespaces{"ctf-organiser"}, "", `from namespace ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.allowed.Allow(tmpl, "secretEnv TOKEN", tt.namespace)
			if tt.refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.refused))
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
			got := notOrganisers(&tt.secret)
			if tt.problem == "" {
				NewWithT(t).Expect(got).To(BeEmpty())
				return
			}
			NewWithT(t).Expect(got).To(ContainSubstring(tt.problem))
		})
	}
}

// TestReadJudgesBothTiers: a Secret is read only from a namespace the
// admin allows and only when marked as the organiser's, the namespace
// judged first (nothing is read from a namespace not allowed); an error
// names the Secret and key, never a value.
func TestReadJudgesBothTiers(t *testing.T) {
	const value = "CTF{never-shown}"
	marked := map[string]string{ctfv1alpha1.OrganiserSecretLabel: "true"}
	data := map[string][]byte{"flag": []byte(value), "empty": nil}
	cl := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ctf-organiser", Name: "flags", Labels: marked}, Data: data},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ctf-organiser", Name: "token-key"}, Data: data},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "flags", Labels: marked}, Data: data},
	).Build()
	r := Reader{Client: cl, Namespaces: Namespaces{"ctf-organiser"}}
	tests := []struct {
		name, namespace, secret, key string
		reason, problem              string // "" reads it
	}{
		{"marked, in an allowed namespace", "ctf-organiser", "flags", "flag", "", ""},
		{"marked, in a namespace not allowed", "kube-system", "flags", "flag", lifecycle.ReasonPolicyViolation,
			`ChallengeTemplate web-intro reads its flag from namespace "kube-system"; allowed: ctf-organiser`},
		{"not there, in a namespace not allowed", "kube-system", "other", "flag", lifecycle.ReasonPolicyViolation, `from namespace "kube-system"`},
		{"not marked", "ctf-organiser", "token-key", "flag", lifecycle.ReasonPolicyViolation,
			"flag-secret: Secret ctf-organiser/token-key is not marked as the organiser's; a template reads only Secrets labelled ctf.challenge-operator.io/organiser-secret=true"},
		{"no such key", "ctf-organiser", "flags", "other", "", `flag Secret ctf-organiser/flags has no key "other"`},
		{"an empty key", "ctf-organiser", "flags", "empty", "", `flag Secret ctf-organiser/flags has no key "empty"`},
		{"no such Secret", "ctf-organiser", "missing", "flag", "", "reading flag Secret ctf-organiser/missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := r.Read(context.Background(), tmpl, "its flag", &ctfv1alpha1.SecretKeyRef{Namespace: tt.namespace, Name: tt.secret, Key: tt.key})
			if tt.problem == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(got)).To(Equal(value))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.problem)))
			g.Expect(err.Error()).NotTo(ContainSubstring(value))
			if tt.reason != "" {
				g.Expect(lifecycle.IsReason(err, tt.reason)).To(BeTrue(), "got %v", err)
			}
			if tt.name == "no such Secret" {
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a Secret not there yet is retried, not terminal")
			}
		})
	}
}
