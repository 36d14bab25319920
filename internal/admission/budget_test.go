package admission

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

var budgetT0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// budgeted is one of team-1's Challenges, created i seconds after budgetT0,
// of a template of its own name.
func budgeted(name string, i int, mutate ...func(*ctfv1alpha1.Challenge)) *ctfv1alpha1.Challenge {
	return builders.FromTemplate("ctf", name, "team-1", name, append([]builders.ChallengeEdit{
		builders.UID(name), builders.Created(budgetT0.Add(time.Duration(i) * time.Second))}, mutate...)...)
}

func installed(c *ctfv1alpha1.Challenge) { c.Status.StartedAt = &c.CreationTimestamp }

func leaving(c *ctfv1alpha1.Challenge) { c.DeletionTimestamp = ptr.To(metav1.NewTime(budgetT0)) }

func erred(reason string) func(*ctfv1alpha1.Challenge) {
	return func(c *ctfv1alpha1.Challenge) { c.Status.Phase, c.Status.Reason = ctfv1alpha1.PhaseError, reason }
}

func otherTeam(c *ctfv1alpha1.Challenge) { c.Spec.Participant = "team-2" }

// maxInstances bounds a template's instances at n.
func maxInstances(n int32) builders.TemplateEdit {
	return func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.MaxInstances = ptr.To(n) }
}

func requests(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
}

// TestCheckBudget: installed and admitted instances count, then the older
// ones waiting, each as far as it fits, in creation order; leaving,
// younger, other teams' and otherwise refused ones do not.
func TestCheckBudget(t *testing.T) {
	small := requests("100m", "64Mi")
	priced := func(c *ctfv1alpha1.Challenge, cost corev1.ResourceList) Priced {
		return Priced{Challenge: c, Requests: cost}
	}
	cpu300 := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}
	tests := []struct {
		name   string
		c      *ctfv1alpha1.Challenge
		need   corev1.ResourceList
		others []Priced
		budget corev1.ResourceList
		want   string
	}{
		{"alone, within", budgeted("c", 5), small, nil, cpu300, ""},
		{"alone, above", budgeted("c", 5), requests("400m", "64Mi"), nil, cpu300,
			"participant team-1's budget is cpu 300m (the operator's --team-budget-cpu and --team-budget-memory); its instances request cpu 0 and this one needs cpu 400m"},
		{"exactly the budget", budgeted("c", 5), small, []Priced{priced(budgeted("a", 1, installed), requests("200m", "1Gi"))}, cpu300, ""},
		{"installed ones fill it", budgeted("c", 5), small, []Priced{priced(budgeted("a", 1, installed), small), priced(budgeted("b", 9, installed), requests("150m", "0"))}, cpu300,
			"its instances request cpu 250m and this one needs cpu 100m"},
		{"one leaving counts nothing", budgeted("c", 5), small, []Priced{priced(budgeted("a", 1, installed, leaving), requests("300m", "0"))}, cpu300, ""},
		{"another team's count nothing", budgeted("c", 5), small, []Priced{priced(budgeted("a", 1, installed, otherTeam), requests("300m", "0"))}, cpu300, ""},
		{"an installed instance that crashes counts", budgeted("c", 5), small, []Priced{priced(budgeted("a", 1, installed, erred("CrashLoopBackOff")), requests("300m", "0"))}, cpu300, "request cpu 300m"},
		{"older ones waiting come first", budgeted("c", 5), small, []Priced{
			priced(budgeted("a", 1, installed), small), priced(budgeted("b", 2), small), priced(budgeted("d", 3), small)}, cpu300, "request cpu 300m"},
		{"same second: by name", budgeted("b", 5), small, []Priced{priced(budgeted("a", 5), requests("250m", "0"))}, cpu300, "request cpu 250m"},
		{"younger ones waiting come after", budgeted("c", 5), small, []Priced{
			priced(budgeted("a", 1, installed), requests("200m", "0")), priced(budgeted("d", 6), small)}, cpu300, ""},
		{"a younger one admitted counts", budgeted("c", 5), small, []Priced{
			priced(budgeted("a", 1, installed), requests("200m", "0")), {Challenge: budgeted("d", 6), Requests: small, Admitted: true}}, cpu300, "request cpu 300m"},
		{"an admission counts before its status shows it", budgeted("c", 5), small, []Priced{
			{Challenge: budgeted("a", 6, erred(lifecycle.ReasonQuotaExceeded)), Requests: requests("300m", "0"), Admitted: true}}, cpu300, "request cpu 300m"},
		{"an older one refused otherwise counts nothing", budgeted("c", 5), small, []Priced{
			priced(budgeted("a", 1, erred(lifecycle.ReasonPolicyViolation)), requests("300m", "0"))}, cpu300, ""},
		{"an older one the quota refuses now counts nothing", budgeted("c", 5), small, []Priced{
			{Challenge: budgeted("a", 1), Requests: requests("300m", "0"), Refused: true}}, cpu300, ""},
		{"an older one the quota refused when last judged is judged again", budgeted("c", 5), small, []Priced{
			priced(budgeted("a", 1, erred(lifecycle.ReasonQuotaExceeded)), requests("300m", "0"))}, cpu300, "request cpu 300m"},
		{"an older one over the budget is judged again, first", budgeted("c", 5), small, []Priced{
			priced(budgeted("a", 1, installed), small), priced(budgeted("b", 2, erred(lifecycle.ReasonBudgetExceeded)), requests("150m", "0"))}, cpu300,
			"request cpu 250m"},
		{"an older one that cannot fit leaves room for the next", budgeted("c", 5), small, []Priced{
			priced(budgeted("a", 1, installed), small), priced(budgeted("b", 2), requests("250m", "0"))}, cpu300, ""},
		{"c itself among the others", budgeted("c", 5), small, []Priced{priced(budgeted("c", 5, installed), requests("300m", "0"))}, cpu300, ""},
		{"memory alone bounded", budgeted("c", 5), requests("10", "64Mi"), []Priced{priced(budgeted("a", 1, installed), requests("10", "192Mi"))},
			corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}, ""},
		{"memory over, cpu within", budgeted("c", 5), requests("100m", "128Mi"), []Priced{priced(budgeted("a", 1, installed), requests("100m", "192Mi"))},
			requests("1", "256Mi"), "budget is cpu 1, memory 256Mi (the operator's --team-budget-cpu and --team-budget-memory); its instances request cpu 100m, memory 192Mi and this one needs cpu 100m, memory 128Mi"},
		{"not created yet (the webhook): every one waiting is older", &ctfv1alpha1.Challenge{Spec: ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "c"}}, small,
			[]Priced{priced(budgeted("a", 1), requests("250m", "0"))}, cpu300, "request cpu 250m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckBudget(tt.c, tt.need, tt.others, tt.budget)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonBudgetExceeded)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}

// teamReader lists team-1's Challenges as the cache would, a copy each
// time, and has every template but "gone".
type teamReader struct {
	client.Reader
	mu    sync.Mutex
	items []*ctfv1alpha1.Challenge
}

func (r *teamReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := list.(*ctfv1alpha1.ChallengeList)
	out.Items = nil
	for _, c := range r.items {
		out.Items = append(out.Items, *c.DeepCopy())
	}
	return nil
}

func (r *teamReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if key.Name == "gone" {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "challengetemplates"}, key.Name)
	}
	obj.(*ctfv1alpha1.ChallengeTemplate).Name = key.Name
	return nil
}

func (r *teamReader) set(items ...*ctfv1alpha1.Challenge) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = items
}

// tenth costs 100m and 64Mi an instance, or nothing composes for a
// template named "refused".
func tenth(_ *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) (corev1.ResourceList, error) {
	if tmpl != nil && tmpl.Name == "refused" {
		return nil, lifecycle.Errorf(lifecycle.ReasonValueNotAllowed, "refused")
	}
	return requests("100m", "64Mi"), nil
}

// tmplOf is the template c names, with nothing set.
func tmplOf(c *ctfv1alpha1.Challenge) *ctfv1alpha1.ChallengeTemplate {
	return builders.BareTemplate(c.Spec.Template)
}

// TestBudgetAdmitsParallelStartsWithinIt: six Challenges of one team,
// decided at once from goroutines while the cache shows them all: exactly
// the two oldest fit a budget of 250m, whatever order they are decided in.
func TestBudgetAdmitsParallelStartsWithinIt(t *testing.T) {
	for run := range 20 {
		g := NewWithT(t)
		reader := &teamReader{}
		var chs []*ctfv1alpha1.Challenge
		for i := range 6 {
			chs = append(chs, budgeted(fmt.Sprintf("c%d", i), 0))
		}
		reader.set(chs...)
		b := &Budget{Reader: reader, CPU: resource.MustParse("250m"), Cost: tenth}
		errs := make([]error, len(chs))
		var wg sync.WaitGroup
		for i, c := range chs {
			wg.Go(func() { errs[i] = b.Admit(context.Background(), c, tmplOf(c)) })
		}
		wg.Wait()
		admitted := make([]bool, len(chs))
		for i, err := range errs {
			admitted[i] = err == nil
			g.Expect(err == nil || lifecycle.IsReason(err, lifecycle.ReasonBudgetExceeded)).To(BeTrue(), "got %v", err)
		}
		g.Expect(admitted).To(Equal([]bool{true, true, false, false, false, false}), "run %d", run)
	}
}

// TestBudgetCountsAdmissionsTheCacheMissed: a Challenge decided while the
// cache does not show its older siblings yet is admitted; those decided
// after count it, whatever their place, until it is installed or gone.
func TestBudgetCountsAdmissionsTheCacheMissed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a, b1, c := budgeted("a", 0), budgeted("b", 0), budgeted("c", 0)
	reader := &teamReader{}
	b := &Budget{Reader: reader, CPU: resource.MustParse("250m"), Cost: tenth}

	reader.set(c)
	g.Expect(b.Admit(ctx, c, tmplOf(c))).To(Succeed(), "the cache shows c alone")
	reader.set(a, b1, c)
	g.Expect(b.Admit(ctx, a, tmplOf(a))).To(Succeed())
	err := b.Admit(ctx, b1, tmplOf(b1))
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonBudgetExceeded)).To(BeTrue(), "a and c hold 200m: got %v", err)
	g.Expect(b.Admit(ctx, c, tmplOf(c))).To(Succeed(), "an admission stands")
	g.Expect(b.Check(ctx, b1, tmplOf(b1))).To(HaveOccurred(), "the webhook counts the admissions too")

	// c goes before it was installed: its admission goes with it.
	reader.set(a, b1)
	g.Expect(b.Admit(ctx, b1, tmplOf(b1))).To(Succeed())

	// Installed, they count by their status.
	installed(a)
	installed(b1)
	reader.set(a, b1, c)
	err = b.Admit(ctx, c, tmplOf(c))
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonBudgetExceeded)).To(BeTrue(), "got %v", err)
	g.Expect(b.admitted["team-1"]).To(BeEmpty(), "installed ones need no memory")
}

// TestBudgetAdmitsAnInstalledOneReadBeforeItsInstall: a Challenge the
// cache shows installed passes, though its own copy, read before its
// install, does not show it yet and its admission was dropped since by a
// decision that saw it installed (a Helm reconcile that follows its own
// install reads such a copy); its older siblings waiting do not push it out.
func TestBudgetAdmitsAnInstalledOneReadBeforeItsInstall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	older1, older2, c := budgeted("older1", 0), budgeted("older2", 1), budgeted("c", 2)
	reader := &teamReader{}
	b := &Budget{Reader: reader, CPU: resource.MustParse("200m"), Cost: tenth}

	reader.set(c)
	g.Expect(b.Admit(ctx, c, tmplOf(c))).To(Succeed(), "the cache shows c alone")
	stale := c.DeepCopy()
	installedC := budgeted("c", 2, installed)
	reader.set(older1, older2, installedC)
	g.Expect(b.Admit(ctx, older1, tmplOf(older1))).To(Succeed(), "c installed and older1: 200m")
	g.Expect(b.admitted["team-1"]).NotTo(HaveKey(c.UID), "c's admission dropped: the cache shows it installed")
	err := b.Admit(ctx, older2, tmplOf(older2))
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonBudgetExceeded)).To(BeTrue(), "got %v", err)

	g.Expect(b.Admit(ctx, stale, tmplOf(stale))).To(Succeed(), "installed, as the cache shows")
}

// TestBudgetPrunesWhatWillNotInstall: an admitted Challenge whose values no
// longer compose, or whose template is gone, costs nothing and loses its
// admission; one the quota refused is forgotten; Check records nothing.
func TestBudgetPrunesWhatWillNotInstall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a, b1, c := budgeted("a", 0), budgeted("b", 1), budgeted("c", 2)
	reader := &teamReader{}
	reader.set(a, b1, c)
	b := &Budget{Reader: reader, CPU: resource.MustParse("200m"), Cost: tenth}
	g.Expect(b.Check(ctx, a, tmplOf(a))).To(Succeed())
	g.Expect(b.admitted).To(BeEmpty(), "Check records nothing")
	g.Expect(b.Admit(ctx, a, tmplOf(a))).To(Succeed())
	g.Expect(b.Admit(ctx, b1, tmplOf(b1))).To(Succeed())
	g.Expect(b.Admit(ctx, c, tmplOf(c))).To(HaveOccurred())

	a.Spec.Template = "refused"
	reader.set(a, b1, c)
	g.Expect(b.Admit(ctx, c, tmplOf(c))).To(Succeed(), "a's values no longer compose: it will not be installed")
	g.Expect(b.admitted["team-1"]).To(HaveLen(2))

	b.Forget(b1)
	b1.Spec.Template = "gone"
	reader.set(a, b1, c, budgeted("d", 3))
	d := budgeted("d", 3)
	g.Expect(b.Admit(ctx, d, tmplOf(d))).To(Succeed(), "b forgotten and its template gone: c and d fit")
}

// TestBudgetDisabled: no budget, or a nil one, admits everything and
// reads nothing.
func TestBudgetDisabled(t *testing.T) {
	g := NewWithT(t)
	c := budgeted("c", 0)
	var none *Budget
	g.Expect(none.Admit(context.Background(), c, nil)).To(Succeed())
	g.Expect(none.Enabled()).To(BeFalse())
	g.Expect((&Budget{}).Admit(context.Background(), c, nil)).To(Succeed(), "a nil Reader is never read")
	g.Expect((&Budget{CPU: resource.MustParse("0")}).Enabled()).To(BeFalse())
}

// TestBudgetJudgesTheQuotaAgain: an older Challenge counts only if the
// quota admits it now, whatever its status says: one refused by the quota
// when a sibling held its template counts once that sibling goes; a
// duplicate of an installed instance never does.
func TestBudgetJudgesTheQuotaAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	running := budgeted("a", 0, installed)
	waiting := budgeted("b", 1, erred(lifecycle.ReasonQuotaExceeded))
	dup := budgeted("dup", 2, func(c *ctfv1alpha1.Challenge) { c.Spec.Template = "a" })
	c := budgeted("c", 3)
	reader := &teamReader{}
	reader.set(running, waiting, dup, c)
	b := &Budget{Reader: reader, CPU: resource.MustParse("300m"), Cost: tenth, Quota: &Quota{Reader: reader}}
	g.Expect(b.Check(ctx, c, tmplOf(c))).To(Succeed(), "a, b and c: dup is a's duplicate, which the quota refuses")

	b.CPU = resource.MustParse("200m")
	err := b.Check(ctx, c, tmplOf(c))
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonBudgetExceeded)).To(BeTrue(), "b's QuotaExceeded is stale: the quota admits it now; got %v", err)
}
