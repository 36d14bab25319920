package challengetemplate

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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

// TestARefusedSolverStatusWriteTouchesNoCanary: what the solver check does
// to its canaries comes once its status is written, as the template
// conditions' canaries do. When the write is refused as a conflict (the
// template was read stale, or changed meanwhile), no canary is created and
// none is deleted. Before, a refused first write left a canary the status
// never named, and a decision read stale (no canary named yet) kept one of
// two and deleted the other, the one the status named: that canary was
// reconciled once, not found, and the check waited for it for
// CanaryTimeout ("being started"), as TestSolverCheck once did in CI.
func TestARefusedSolverStatusWriteTouchesNoCanary(t *testing.T) {
	canaries := &containment.Canaries{Namespace: "ctf-pool"}
	newTmpl := func() *ctfv1alpha1.ChallengeTemplate {
		return &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web", Generation: 1},
			Spec: ctfv1alpha1.ChallengeTemplateSpec{SolverCheck: &ctfv1alpha1.SolverCheck{Image: "registry.example/solver:1"}}}
	}
	refused := interceptor.Funcs{SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
		return apierrors.NewConflict(schema.GroupResource{Group: ctfv1alpha1.GroupVersion.Group, Resource: "challengetemplates"}, "web", nil)
	}}
	reconcileRefused := func(g Gomega, objs ...client.Object) client.Client {
		cl := fake.NewClientBuilder().WithScheme(fakeScheme(g)).WithObjects(objs...).WithStatusSubresource(objs...).
			WithInterceptorFuncs(refused).Build()
		r := &SolverCheckReconciler{Client: cl, Status: &TemplateStatusWriter{Client: cl, Live: cl}, Live: cl,
			Organiser: organisersecret.Reader{Client: cl}, Canaries: canaries, Recorder: events.NewFakeRecorder(10)}
		result, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "web"}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(result.RequeueAfter).To(Equal(conflictRetry), "decided again from the template as it is")
		return cl
	}
	names := func(g Gomega, cl client.Client) []string {
		var list ctfv1alpha1.ChallengeList
		g.Expect(cl.List(context.Background(), &list, client.InNamespace(canaries.Namespace))).To(Succeed())
		var out []string
		for _, ch := range list.Items {
			out = append(out, ch.Name)
		}
		return out
	}

	t.Run("none yet", func(t *testing.T) {
		g := NewWithT(t)
		cl := reconcileRefused(g, newTmpl())
		g.Expect(names(g, cl)).To(BeEmpty(), "no canary the status does not name")
	})
	t.Run("read stale", func(t *testing.T) {
		g := NewWithT(t)
		tmpl := newTmpl()
		named, orphan := canaries.NewSolver(tmpl), canaries.NewSolver(tmpl)
		cl := reconcileRefused(g, tmpl, named, orphan)
		g.Expect(names(g, cl)).To(ConsistOf(named.Name, orphan.Name), "neither deleted on a decision refused")
	})
}

// TestASolverCanaryNamedButNotCreatedIsReplaced: the status names a canary
// before it is created; one the cache does not hold yet is waited for while
// the API server holds it, and replaced at once when it does not (its
// creation failed after the write, or it was deleted), not at its deadline.
func TestASolverCanaryNamedButNotCreatedIsReplaced(t *testing.T) {
	canaries := &containment.Canaries{Namespace: "ctf-pool"}
	for _, tt := range []struct {
		name    string
		created bool
	}{{"created, not in the cache yet", true}, {"never created", false}} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web", Generation: 1},
				Spec: ctfv1alpha1.ChallengeTemplateSpec{SolverCheck: &ctfv1alpha1.SolverCheck{Image: "registry.example/solver:1"}}}
			named := canaries.NewSolver(tmpl)
			tmpl.Status.Solver = &ctfv1alpha1.SolverStatus{Canary: named.Name, NextRunAt: ptr.To(metav1.NewTime(time.Now().Add(time.Minute)))}
			cache := fake.NewClientBuilder().WithScheme(fakeScheme(g)).WithObjects(tmpl).WithStatusSubresource(tmpl).Build()
			live := fake.NewClientBuilder().WithScheme(fakeScheme(g)).Build()
			if tt.created {
				g.Expect(live.Create(context.Background(), named.DeepCopy())).To(Succeed())
			}
			r := &SolverCheckReconciler{Client: cache, Status: &TemplateStatusWriter{Client: cache, Live: cache}, Live: live,
				Organiser: organisersecret.Reader{Client: cache}, Canaries: canaries, Recorder: events.NewFakeRecorder(10)}

			result, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "web"}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cache.Get(context.Background(), client.ObjectKeyFromObject(tmpl), tmpl)).To(Succeed())
			var list ctfv1alpha1.ChallengeList
			g.Expect(cache.List(context.Background(), &list, client.InNamespace(canaries.Namespace))).To(Succeed())
			if tt.created {
				g.Expect(result.RequeueAfter).To(BeNumerically("~", time.Minute, time.Second), "waited for until its deadline")
				g.Expect(list.Items).To(BeEmpty(), "no second canary")
				g.Expect(tmpl.Status.Solver.Canary).To(Equal(named.Name))
				return
			}
			g.Expect(list.Items).To(HaveLen(1), "a canary in its place")
			g.Expect(list.Items[0].Name).NotTo(Equal(named.Name))
			g.Expect(tmpl.Status.Solver.Canary).To(Equal(list.Items[0].Name), "the status names the canary created")
		})
	}
}
