package operator_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestTemplatesReadOnlyTheOrganisersSecrets: a template once read any
// Secret of the flag namespaces, which by default also hold every
// instance's flag Secret and the instancer's token signing key, so whoever
// wrote a template could copy another team's flag, or the key that mints
// every team's token, into an instance. A template now reads only Secrets
// marked as the organiser's, Opaque, and no instance's; anything else is
// Error/PolicyViolation naming the Secret, and nothing is installed.
func TestTemplatesReadOnlyTheOrganisersSecrets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	organiser := harness.OrganiserNamespace

	// Another team's instance whose flag Secret lives in the flag namespace.
	g.Expect(k8s.Create(ctx, harness.OrganiserSecret("victim-static", map[string][]byte{"flag": []byte("CTF{victims-own}")}))).To(Succeed())
	h.Template(t, "tpl-victim", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: organiser, Name: "victim-static", Key: "flag"}}
	})
	victim := builders.FromTemplate(organiser, "victim", "team-victim", "tpl-victim")
	g.Expect(k8s.Create(ctx, victim)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), victim) })
	eventuallyPhase(t, victim, ctfv1alpha1.PhaseRunning)

	marked := map[string]string{ctfv1alpha1.OrganiserSecretLabel: "true"}
	for _, s := range []*corev1.Secret{
		// As the instancer's token key is: Opaque, in the operator's namespace, unmarked.
		{ObjectMeta: metav1.ObjectMeta{Name: "instancer-token-key", Namespace: organiser}, Data: map[string][]byte{"k1": []byte("signing-key-0123456789abcdef0123456789")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "marked-tls", Namespace: organiser, Labels: marked}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("private-key")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "marked-instance", Namespace: organiser,
			Labels: map[string]string{ctfv1alpha1.OrganiserSecretLabel: "true", ctfv1alpha1.InstanceLabel: "other"}},
			Data: map[string][]byte{"flag": []byte("CTF{another-team}")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "marked-owned", Namespace: organiser, Labels: marked,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ctfv1alpha1.GroupVersion.String(), Kind: "Challenge", Name: victim.Name, UID: victim.UID}}},
			Data: map[string][]byte{"flag": []byte("CTF{another-team}")}},
	} {
		g.Expect(k8s.Create(ctx, s)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), s) })
	}

	tests := []struct {
		name, secret, key, problem string
		env                        bool
	}{
		{"another team's flag Secret", "victim-flag", "flag", "is not marked as the organiser's", false},
		{"another team's flag Secret in secretEnv", "victim-flag", "flag", "is not marked as the organiser's", true},
		{"the instancer's token signing key", "instancer-token-key", "k1", "is not marked as the organiser's", false},
		{"the instancer's token signing key in secretEnv", "instancer-token-key", "k1", "is not marked as the organiser's", true},
		{"a marked TLS key", "marked-tls", "tls.key", "is of type kubernetes.io/tls, not Opaque", true},
		{"a marked Secret labelled as an instance's", "marked-instance", "flag", "belongs to an instance", false},
		{"a marked Secret owned by a Challenge", "marked-owned", "flag", "belongs to an instance", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name := "tpl-reads-" + string(rune('a'+i))
			ref := ctfv1alpha1.SecretKeyRef{Namespace: organiser, Name: tt.secret, Key: tt.key}
			h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				if tt.env {
					s.SecretEnv = []ctfv1alpha1.SecretEnvVar{{Name: "STOLEN", Secret: ref}}
					return
				}
				s.Flag = &ctfv1alpha1.FlagSpec{Static: &ref}
			})
			ch := builders.FromTemplate(ns, name, "team-thief", name)
			g.Expect(k8s.Create(ctx, ch)).To(Succeed())
			got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
			g.Expect(got.Status.Reason).To(Equal("PolicyViolation"))
			g.Expect(got.Status.Message).To(ContainSubstring("flag-secret: Secret " + organiser + "/" + tt.secret + " " + tt.problem))
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-flag"}, &corev1.Secret{})).NotTo(Succeed(), "nothing copied")
		})
	}
}
