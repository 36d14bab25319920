package faults_test

import (
	"context"
	"encoding/base64"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestNoLogLevelPrintsASecret: with --zap-log-level=4 or more, the Helm
// reconciler printed every manifest it installed, upgraded or uninstalled (or
// its diff) to standard output whole, an instance's Secret with its flag and
// secretEnv values in clear. The binary at the most verbose level installs,
// upgrades and deletes an instance with both, and its output holds neither
// value, plain or in base64.
func TestNoLogLevelPrintsASecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const flagValue, password = "CTF{never-in-a-log-7c1e}", "bot-password-never-in-a-log-5d2a"
	organiser := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harness.OrganiserNamespace}}
	if err := k8s.Create(ctx, organiser); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	secret := harness.OrganiserSecret("logged", map[string][]byte{"flag": []byte(flagValue), "password": []byte(password)})
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	tmpl := builders.Template("logged", web, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: secret.Name, Key: "flag"}}
		s.SecretEnv = []ctfv1alpha1.SecretEnvVar{{Name: "ADMIN_PASSWORD",
			Secret: ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: secret.Name, Key: "password"}}}
	})
	g.Expect(k8s.Create(ctx, tmpl)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), tmpl) })

	p := startOperator(t, "verbose", "--zap-log-level=10")
	ns := namespace(t, "verbose-logs")
	g.Expect(k8s.Create(ctx, builders.FromTemplate(ns, "verbose", "team-verbose", tmpl.Name))).To(Succeed())
	eventuallyAllRunning(t, ns, 1, time.Minute)

	// An upgrade: the template's instances render anew.
	g.Expect(harness.EditTemplate(ctx, k8s, tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Env = []ctfv1alpha1.EnvVar{{Name: "MODE", Value: "upgraded"}}
	})).To(Succeed())
	g.Eventually(func() bool { return p.logContains("Release upgraded") }, time.Minute, interval).Should(BeTrue())

	deleteAllAndCheck(t, ns, time.Minute)
	g.Expect(p.logContains("Release uninstalled") || p.logContains("uninstall")).To(BeTrue(), "the uninstall was logged")
	log, err := os.ReadFile(p.Log)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(log)).To(ContainSubstring(`"level":"Level(-8)"`), "the most verbose levels are on")
	for _, v := range []string{flagValue, password} {
		g.Expect(string(log)).NotTo(ContainSubstring(v))
		g.Expect(string(log)).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(v))))
	}
}
