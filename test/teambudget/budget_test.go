package teambudget_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// templates creates n templates, prefix-0 to prefix-<n-1>, whose instances
// ask the operator's default requests: a team has one instance per
// template, so a team's several instances are of several templates.
func templates(t *testing.T, prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		h.Template(t, names[i], nil)
	}
	return names
}

// expectNothingInstalled: no Deployment and no Helm release record for ch.
func expectNothingInstalled(t *testing.T, ch *ctfv1alpha1.Challenge) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(apierrors.IsNotFound(h.Client.Get(ctx, client.ObjectKeyFromObject(ch), &appsv1.Deployment{}))).To(BeTrue(), "%s: no Deployment", ch.Name)
	var records corev1.SecretList
	g.Expect(h.Client.List(ctx, &records, client.InNamespace(ch.Namespace), client.MatchingLabels{"owner": "helm", "name": ch.Name})).To(Succeed())
	g.Expect(records.Items).To(BeEmpty(), "%s: no release", ch.Name)
}

// teamRequests sums the requests of the containers of participant's
// Deployments in ns, times their replicas: what the team runs.
func teamRequests(g Gomega, ns, participant string) (cpu, memory resource.Quantity, deployments int) {
	var deps appsv1.DeploymentList
	g.Expect(h.Client.List(context.Background(), &deps, client.InNamespace(ns),
		client.MatchingLabels{ctfv1alpha1.ParticipantLabel: participant})).To(Succeed())
	for _, d := range deps.Items {
		replicas := int64(1)
		if d.Spec.Replicas != nil {
			replicas = int64(*d.Spec.Replicas)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			c1, m1 := c.Resources.Requests[corev1.ResourceCPU], c.Resources.Requests[corev1.ResourceMemory]
			c1.Mul(replicas)
			m1.Mul(replicas)
			cpu.Add(c1)
			memory.Add(m1)
		}
	}
	return cpu, memory, len(deps.Items)
}

// verdicts are the phase and reason of each of chs, by name: "Running",
// "Error/BudgetExceeded".
func verdicts(g Gomega, chs []*ctfv1alpha1.Challenge) map[string]string {
	out := map[string]string{}
	for _, ch := range chs {
		got := &ctfv1alpha1.Challenge{}
		g.Expect(h.Client.Get(context.Background(), client.ObjectKeyFromObject(ch), got)).To(Succeed())
		out[ch.Name] = string(got.Status.Phase)
		if got.Status.Phase == ctfv1alpha1.PhaseError {
			out[ch.Name] += "/" + got.Status.Reason
		}
	}
	return out
}

const refused = "Error/" + lifecycle.ReasonBudgetExceeded

// TestTeamAtItsBudgetIsRefused: a team whose three instances (50m each)
// fill its 150m is refused a fourth, with the budget, what is in use and
// what the instance needs, and nothing installed; another team is not. One
// of the team's instances going lets the refused one in by itself; an
// instance asking more than the default waits until its whole cost fits.
func TestTeamAtItsBudgetIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, nil)
	names := templates(t, "full", 4)
	h.Template(t, "full-big", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		cpu := ctfv1alpha1.Quantity("100m")
		s.Resources = &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: &cpu}}
	})
	var team []*ctfv1alpha1.Challenge
	for i := range 3 {
		ch := builders.FromTemplate(ns, fmt.Sprintf("full-%d", i), "team-full", names[i])
		g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
		team = append(team, ch)
	}
	for _, ch := range team {
		h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	}

	over := builders.FromTemplate(ns, "over", "team-full", names[3])
	g.Expect(h.Client.Create(ctx, over)).To(Succeed())
	got := h.EventuallyPhase(t, over, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal(lifecycle.ReasonBudgetExceeded))
	g.Expect(got.Status.Message).To(Equal("participant team-full's budget is cpu 150m, memory 1Gi (the operator's --team-budget-cpu and --team-budget-memory); " +
		"its instances request cpu 150m, memory 192Mi and this one needs cpu 50m, memory 64Mi"))
	expectNothingInstalled(t, over)

	other := builders.FromTemplate(ns, "other", "team-other", names[3])
	g.Expect(h.Client.Create(ctx, other)).To(Succeed())
	h.EventuallyPhase(t, other, ctfv1alpha1.PhaseRunning)

	g.Expect(h.Client.Delete(ctx, team[0])).To(Succeed())
	h.EventuallyPhase(t, over, ctfv1alpha1.PhaseRunning)

	big := builders.FromTemplate(ns, "big", "team-full", "full-big")
	g.Expect(h.Client.Create(ctx, big)).To(Succeed())
	got = h.EventuallyPhase(t, big, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal(lifecycle.ReasonBudgetExceeded))
	g.Expect(got.Status.Message).To(HaveSuffix("this one needs cpu 100m, memory 64Mi"))
	expectNothingInstalled(t, big)

	g.Expect(h.Client.Delete(ctx, team[1])).To(Succeed())
	g.Expect(h.Client.Delete(ctx, team[2])).To(Succeed())
	h.EventuallyPhase(t, big, ctfv1alpha1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		cpu, memory, n := teamRequests(g, ns, "team-full")
		g.Expect(n).To(Equal(2), "over and big")
		g.Expect(cpu.Cmp(resource.MustParse("150m"))).To(BeZero(), "cpu %s", &cpu)
		g.Expect(memory.Cmp(resource.MustParse("128Mi"))).To(BeZero(), "memory %s", &memory)
	}, harness.Timeout, harness.Interval).Should(Succeed())
}

// createAtOnce creates chs from goroutines of their own, as a platform
// does for a team clicking start on six challenges at once.
func createAtOnce(g Gomega, chs []*ctfv1alpha1.Challenge) {
	errs := make([]error, len(chs))
	var wg sync.WaitGroup
	for i, ch := range chs {
		wg.Go(func() { errs[i] = h.Client.Create(context.Background(), ch) })
	}
	wg.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// TestParallelStartsCannotDodgeTheBudget: six Challenges of one team,
// created at once, each 50m of a 150m budget: exactly three are admitted
// and run, the other three are refused and install nothing, and what the
// team runs is within its budget.
func TestParallelStartsCannotDodgeTheBudget(t *testing.T) {
	g := NewWithT(t)
	ns := h.Namespace(t, nil)
	names := templates(t, "par", 6)
	var chs []*ctfv1alpha1.Challenge
	for i, name := range names {
		chs = append(chs, builders.FromTemplate(ns, fmt.Sprintf("par-%d", i), "team-par", name))
	}
	createAtOnce(g, chs)

	counted := func(g Gomega) map[string]int {
		out := map[string]int{}
		for _, v := range verdicts(g, chs) {
			out[v]++
		}
		return out
	}
	g.Eventually(counted, harness.Timeout, harness.Interval).Should(Equal(map[string]int{"Running": 3, refused: 3}))
	final := verdicts(g, chs)
	for _, ch := range chs {
		if final[ch.Name] == refused {
			expectNothingInstalled(t, ch)
		}
	}
	cpu, memory, n := teamRequests(g, ns, "team-par")
	g.Expect(n).To(Equal(3))
	g.Expect(cpu.Cmp(budgetCPU)).To(BeZero(), "cpu %s", &cpu)
	g.Expect(memory.Cmp(resource.MustParse("192Mi"))).To(BeZero(), "memory %s", &memory)
}

// TestBurstSeenAtOnceIsAdmittedOldestFirst: six Challenges of one team
// created at once while the operator is down (so that its cache shows
// them all at its first decision, as after a restart) are decided in
// creation order: the three oldest run, the three youngest are refused.
func TestBurstSeenAtOnceIsAdmittedOldestFirst(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, nil)
	names := templates(t, "burst", 6)
	var chs []*ctfv1alpha1.Challenge
	for i, name := range names {
		chs = append(chs, builders.FromTemplate(ns, fmt.Sprintf("burst-%d", i), "team-burst", name))
	}
	h.Stop()
	started := false
	t.Cleanup(func() {
		if !started {
			_ = h.Start()
		}
	})
	createAtOnce(g, chs)
	g.Expect(h.Start()).To(Succeed())
	started = true

	// Creation order: the API server's creation time, to the second, then
	// the name (one namespace).
	for _, ch := range chs {
		g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
	}
	slices.SortFunc(chs, func(a, b *ctfv1alpha1.Challenge) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	want := map[string]string{}
	for i, ch := range chs {
		want[ch.Name] = "Running"
		if i >= 3 {
			want[ch.Name] = refused
		}
	}
	g.Eventually(func(g Gomega) map[string]string { return verdicts(g, chs) }, harness.Timeout, harness.Interval).Should(Equal(want))
	for _, ch := range chs[3:] {
		expectNothingInstalled(t, ch)
	}
}

// TestRaisingARunningInstanceIsJudgedByTheBudget: a platform patch of a
// running instance's requests is judged as a start is (the budget was
// checked at admission only, so 900m was once rendered beside a team's
// 400m under a 1-CPU budget): a raise past the team's budget is refused
// with BudgetExceeded, and the instance runs on as it was; a change within
// it, or back down, is rolled out.
func TestRaisingARunningInstanceIsJudgedByTheBudget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, nil)
	a, b := builders.Challenge(ns, "raise-a", "team-raise"), builders.Challenge(ns, "raise-b", "team-raise")
	for _, ch := range []*ctfv1alpha1.Challenge{a, b} {
		g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	}
	for _, ch := range []*ctfv1alpha1.Challenge{a, b} {
		h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	}
	setCPU := func(cpu string) {
		g.Eventually(func() error {
			cur := &ctfv1alpha1.Challenge{}
			if err := h.Client.Get(ctx, client.ObjectKeyFromObject(a), cur); err != nil {
				return err
			}
			q := ctfv1alpha1.Quantity(cpu)
			cur.Spec.Resources = &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: &q}}
			return h.Client.Update(ctx, cur)
		}, harness.Timeout, harness.Interval).Should(Succeed())
	}
	requestedCPU := func(g Gomega) string {
		dep := &appsv1.Deployment{}
		g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(a), dep)).To(Succeed())
		q := dep.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		return q.String()
	}

	setCPU("120m") // 120m beside b's 50m: past the team's 150m
	got := h.EventuallyPhase(t, a, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal(lifecycle.ReasonBudgetExceeded))
	g.Expect(got.Status.Message).To(ContainSubstring("this one needs cpu 120m"))
	g.Expect(got.Status.Message).To(HaveSuffix("the change is not applied, the instance runs as it was"))
	g.Consistently(requestedCPU, "3s", harness.Interval).Should(Equal("50m"), "the instance runs as it was")

	setCPU("100m") // 100m beside 50m: within the budget
	h.EventuallyPhase(t, a, ctfv1alpha1.PhaseRunning)
	g.Eventually(requestedCPU, harness.Timeout, harness.Interval).Should(Equal("100m"))
}
