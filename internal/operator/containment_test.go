package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// brokenImage is an image the cluster refuses to run, standing for one
// whose pull fails: KWOK pulls nothing, so a ValidatingAdmissionPolicy
// refuses its pods, and their Deployment reports the failure as a
// kubelet's would be (the instance's Error, with the reason).
const brokenImage = "registry.example/ctf/broken:1"

// refuseImage makes the API server refuse pods running image until the
// test ends.
func refuseImage(t *testing.T, name, image string) {
	t.Helper()
	refusePods(t, name, fmt.Sprintf("object.spec.containers.all(c, c.image != %q)", image), "Back-off pulling image "+image,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: image}}}})
}

// refusePods makes the API server refuse, with message, the pods for which
// the CEL expression is false, until the test ends; probe is a pod it
// refuses, to tell when the policy is enforced.
func refusePods(t *testing.T, name, expression, message string, probe *corev1.Pod) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	g.Expect(k8s.Create(ctx, policy)).To(Succeed())
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), binding)
		_ = k8s.Delete(context.Background(), policy)
	})
	// The API server enforces a policy once its informers have it: until the
	// probe is refused, it is not.
	g.Eventually(func() error { return k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll) }, timeout, interval).
		Should(MatchError(ContainSubstring(message)))
}

// judgedOnce waits for tmpl's first Degraded condition: failures from
// before a template's first look are never counted (containment's
// lastGood), so a test's failing instances must come after it.
func judgedOnce(t *testing.T, tmpl *ctfv1alpha1.ChallengeTemplate) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		got := &ctfv1alpha1.ChallengeTemplate{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
		g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, "Degraded")).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
}

// TestBrokenImageDegradesItsTemplateOnly (issue 33): a template whose image
// cannot run fails its first three teams' instances, then is Degraded: a
// fourth team's start waits, Queued with that reason rather than failing,
// while another template's instance starts as usual. The organiser fixes
// the image: a canary instance of the operator's own runs, the hold is
// lifted, the waiting start goes ahead and the canary is gone.
func TestBrokenImageDegradesItsTemplateOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	refuseImage(t, "refuse-broken-image", brokenImage)
	broken := h.Template(t, "broken-image", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Image = brokenImage })
	other := h.Template(t, "beside-broken", nil)
	judgedOnce(t, broken)

	var failed []*ctfv1alpha1.Challenge
	for i := range ctfv1alpha1.DefaultFailureThreshold {
		ch := builders.FromTemplate(ns, fmt.Sprintf("broken-%d", i), fmt.Sprintf("%s-broken-%d", ns, i), broken.Name)
		g.Expect(k8s.Create(ctx, ch)).To(Succeed())
		failed = append(failed, ch)
	}
	for _, ch := range failed {
		got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
		g.Expect(got.Status.Message).To(ContainSubstring("Back-off pulling image"))
	}
	tmpl := &ctfv1alpha1.ChallengeTemplate{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(broken), tmpl)).To(Succeed())
		degraded := apimeta.FindStatusCondition(tmpl.Status.Conditions, "Degraded")
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue), degraded.Message)
		g.Expect(degraded.Reason).To(Equal("InstancesFailing"))
		g.Expect(degraded.Message).To(ContainSubstring("3 of its newest instances failed in a row"))
		g.Expect(degraded.Message).To(ContainSubstring("Back-off pulling image"))
		ready := apimeta.FindStatusCondition(tmpl.Status.Conditions, "Ready")
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal("Degraded"))
		g.Expect(tmpl.Status.Health.Failures).To(BeEquivalentTo(3))
	}, timeout, interval).Should(Succeed())

	waiting := builders.FromTemplate(ns, "broken-waits", ns+"-broken-late", broken.Name)
	g.Expect(k8s.Create(ctx, waiting)).To(Succeed())
	got := eventuallyPhase(t, waiting, ctfv1alpha1.PhaseQueued)
	g.Expect(got.Status.Reason).To(Equal("Queued"))
	g.Expect(got.Status.Message).To(ContainSubstring("Degraded"))
	g.Expect(got.Status.Message).NotTo(Or(ContainSubstring(ns+"/broken-"), ContainSubstring(ns+"-broken-")), "no other team's instance named")

	start := time.Now()
	beside := builders.FromTemplate(ns, "beside", ns+"-beside", other.Name)
	g.Expect(k8s.Create(ctx, beside)).To(Succeed())
	eventuallyPhase(t, beside, ctfv1alpha1.PhaseRunning)
	t.Logf("another template's instance Running in %s beside the Degraded one", time.Since(start).Round(10*time.Millisecond))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(waiting), got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseQueued), "still held")

	// The organiser fixes the image: a canary at once, which runs.
	g.Expect(harness.EditTemplate(ctx, k8s, broken.DeepCopy(), func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Image = "registry.example/ctf/fixed:2"
	})).To(Succeed())
	// The canary lifted the hold: its Event says so. The condition says it
	// too until an instance admitted since fails (under load, an install may
	// fail once and be retried), when it counts that failure instead.
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(broken), tmpl)).To(Succeed())
		degraded := apimeta.FindStatusCondition(tmpl.Status.Conditions, "Degraded")
		g.Expect(degraded.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(degraded.Reason).To(BeElementOf("CanaryRan", "FailuresBelowThreshold"))
		if degraded.Reason != "CanaryRan" {
			t.Logf("Degraded since the canary ran: %s: %s", degraded.Reason, degraded.Message)
		}
		g.Expect(apimeta.IsStatusConditionTrue(tmpl.Status.Conditions, "Ready")).To(BeTrue())
		g.Expect(templateEvents(g, broken.Name)).To(ContainElement(HavePrefix("CanaryRan: canary instance " + poolNamespace + "/broken-image-canary-")))
	}, timeout, interval).Should(Succeed())
	eventuallyPhase(t, waiting, ctfv1alpha1.PhaseRunning)
	for _, ch := range failed {
		eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning) // rolled out with the fixed image
	}
	g.Eventually(func(g Gomega) {
		var canaries ctfv1alpha1.ChallengeList
		g.Expect(k8s.List(ctx, &canaries, client.InNamespace(poolNamespace), client.MatchingLabels{ctfv1alpha1.CanaryLabel: broken.Name})).To(Succeed())
		g.Expect(canaries.Items).To(BeEmpty(), "the canary's work is done")
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(templateEvents(g, broken.Name)).To(ContainElement(HavePrefix("Degraded: ")))
	}, timeout, interval).Should(Succeed())
}

// noNodeFits is what the scheduler says of a pod that asks for more CPU
// than any node has; a ValidatingAdmissionPolicy says it for pods asking
// for more than tooMuchCPU, KWOK's node having more than a Challenge may
// ask for.
const (
	noNodeFits = "0/1 nodes are available: 1 Insufficient cpu"
	tooMuchCPU = "1500m"
)

// TestOwnAskingFailuresDoNotDegrade (issue 50, item 12): three Challenges
// that ask, through the values their template lets them override, for
// more CPU than any node has fail, each its own Error; the template stays
// un-Degraded, and a plain team start of it runs rather than waiting
// behind "the challenge is Degraded". (The template's own failures still
// count: TestBrokenImageDegradesItsTemplateOnly.)
func TestOwnAskingFailuresDoNotDegrade(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	refusePods(t, "refuse-too-much-cpu",
		fmt.Sprintf("object.spec.containers.all(c, !has(c.resources.requests) || !('cpu' in c.resources.requests) || quantity(c.resources.requests.cpu).compareTo(quantity(%q)) < 0)", tooMuchCPU),
		noNodeFits,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "registry.example/probe:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m")}}}}}})
	tmpl := h.Template(t, "own-asking", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.OverridableValues = []ctfv1alpha1.ValuePath{"resources"}
	})
	judgedOnce(t, tmpl)

	var greedy []*ctfv1alpha1.Challenge
	for i := range ctfv1alpha1.DefaultFailureThreshold {
		ch := builders.FromTemplate(ns, fmt.Sprintf("greedy-%d", i), fmt.Sprintf("%s-greedy-%d", ns, i), tmpl.Name)
		cpu := ctfv1alpha1.Quantity("1900m")
		ch.Spec.Resources = &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: &cpu}, Limits: &ctfv1alpha1.ResourceAmounts{CPU: &cpu}}
		g.Expect(k8s.Create(ctx, ch)).To(Succeed())
		greedy = append(greedy, ch)
	}
	for _, ch := range greedy {
		got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
		g.Expect(got.Status.Message).To(ContainSubstring(noNodeFits))
	}
	// The template has seen them fail: Degraded (as before the fix), or
	// saying it counts them as their own.
	got := &ctfv1alpha1.ChallengeTemplate{}
	var degraded *metav1.Condition
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
		degraded = apimeta.FindStatusCondition(got.Status.Conditions, "Degraded")
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Status == metav1.ConditionTrue || strings.Contains(degraded.Message, "3 more failed of their own asking")).To(BeTrue(), degraded.Message)
	}, timeout, interval).Should(Succeed())
	g.Expect(degraded.Status).To(Equal(metav1.ConditionFalse), degraded.Message)
	g.Expect(got.Status.Health.Failures).To(BeZero(), "none of the failures is the template's")
	plain := builders.FromTemplate(ns, "plain", ns+"-plain", tmpl.Name)
	g.Expect(k8s.Create(ctx, plain)).To(Succeed())
	eventuallyPhase(t, plain, ctfv1alpha1.PhaseRunning)
	for _, ch := range greedy {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
		g.Expect(ch.Status.Phase).To(Equal(ctfv1alpha1.PhaseError), "each keeps its own Error")
	}
}
