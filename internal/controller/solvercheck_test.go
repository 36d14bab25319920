package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/containment"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
	"github.com/challenge-operator/challenge-operator/internal/solvercheck"
)

// TestTheSolverCheckReadsNoFlagFromANamespaceNotAllowed: the solver check
// reads a template's flags through the render's trust check, so a flag
// Secret outside --flag-secret-namespaces is refused with the render's own
// words, even marked as the organiser's and with its canary Running (as
// after the admin narrowed the namespaces). It once read it, relying on the
// canary's render to have refused first, and handed it to the solver.
func TestTheSolverCheckReadsNoFlagFromANamespaceNotAllowed(t *testing.T) {
	elsewhere := &ctfv1alpha1.SecretKeyRef{Namespace: "kube-system", Name: "flags", Key: "flag"}
	for _, tt := range []struct {
		name    string
		flag    func(*ctfv1alpha1.ChallengeTemplateSpec)
		refused string
	}{
		{"its flag", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Flag = &ctfv1alpha1.FlagSpec{Static: elsewhere} },
			`flag-secret: ChallengeTemplate web reads its flag from namespace "kube-system"; allowed: ctf-organiser`},
		{"a named flag", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", Static: elsewhere}}
		}, `flag-secret: ChallengeTemplate web reads flag main from namespace "kube-system"; allowed: ctf-organiser`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			canaries := &containment.Canaries{Namespace: "ctf-pool"}
			tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web", Generation: 1},
				Spec: ctfv1alpha1.ChallengeTemplateSpec{SolverCheck: &ctfv1alpha1.SolverCheck{Image: "ghcr.io/organiser/solver:1"}}}
			tt.flag(&tmpl.Spec)
			canary := canaries.NewSolver(tmpl)
			canary.Status.Phase = ctfv1alpha1.PhaseRunning
			canary.Status.Endpoint = &ctfv1alpha1.Endpoint{Host: "10.0.0.7", Port: 31337}
			marked := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere.Namespace, Name: elsewhere.Name,
				Labels: map[string]string{ctfv1alpha1.OrganiserSecretLabel: "true"}}, Data: map[string][]byte{"flag": []byte("CTF{not-for-templates}")}}
			cl := fake.NewClientBuilder().WithScheme(fakeScheme(g)).WithObjects(tmpl, canary, marked).WithStatusSubresource(tmpl, canary).Build()
			r := &SolverCheckReconciler{Client: cl, Status: &TemplateStatusWriter{Client: cl, Live: cl}, Live: cl, Canaries: canaries, Recorder: events.NewFakeRecorder(10),
				Organiser: organisersecret.Reader{Client: cl, Namespaces: organisersecret.Namespaces{"ctf-organiser"}}}

			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "web"}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cl.Get(context.Background(), client.ObjectKeyFromObject(tmpl), tmpl)).To(Succeed())
			cond := apimeta.FindStatusCondition(tmpl.Status.Conditions, containment.ConditionSolverHealthy)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionUnknown))
			g.Expect(cond.Reason).To(Equal(solvercheck.ReasonFlagUnavailable))
			g.Expect(cond.Message).To(Equal("the solver canary's expected flag cannot be read: " + tt.refused))
			var jobs batchv1.JobList
			g.Expect(cl.List(context.Background(), &jobs)).To(Succeed())
			g.Expect(jobs.Items).To(BeEmpty(), "no solver runs")
			var secrets corev1.SecretList
			g.Expect(cl.List(context.Background(), &secrets, client.InNamespace(canaries.Namespace))).To(Succeed())
			g.Expect(secrets.Items).To(BeEmpty(), "the flag reaches no solver")
		})
	}
}
