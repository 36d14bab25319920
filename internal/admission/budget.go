package admission

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// Budget bounds what one participant's live instances request together,
// across templates: the cluster admin's --team-budget-cpu and
// --team-budget-memory, which no template or Challenge can raise. An
// instance's cost is its containers' requests as rendered (Cost). Like the
// quota it is decided in creation order, so a team's oldest instances are
// the ones admitted; and since the cache may not show a Challenge created a
// moment ago, the instances this process admitted and has not seen
// installed yet count whatever their place: two starts at once are never
// both admitted beyond the budget.
type Budget struct {
	// Reader lists Challenges, with the ParticipantField index, and reads
	// templates; usually the manager's cache.
	Reader client.Reader
	// CPU and Memory bound the requests of a participant's instances;
	// zero bounds nothing.
	CPU, Memory resource.Quantity
	// Cost is what an instance of a template requests (values.Settings'
	// RequestsOf); an error means its values do not compose, so it will not
	// be installed.
	Cost func(*ctfv1alpha1.Challenge, *ctfv1alpha1.ChallengeTemplate) (corev1.ResourceList, error)
	// Live reads an installed instance's Deployments, whose pod templates
	// the cache strips, when a change would raise its requests past the
	// budget (AdmitInstalled).
	Live client.Reader
	// Quota is the quota judged before the budget (nil for none): an older
	// Challenge waiting for its turn counts only if the quota admits it now,
	// whatever its status said when it was last judged.
	Quota *Quota

	// teams serialises each participant's decisions: a decision reads the
	// admissions made before it.
	teams [64]sync.Mutex
	// mu guards admitted.
	mu sync.Mutex
	// admitted are, by participant, the Challenges this process admitted
	// within the budget and has not seen installed (or gone) yet.
	admitted map[string]map[types.UID]bool
}

// Enabled tells whether b bounds anything; a nil Budget bounds nothing.
func (b *Budget) Enabled() bool { return b != nil && len(b.limit()) > 0 }

// limit is the budget as a ResourceList of its bounded resources.
func (b *Budget) limit() corev1.ResourceList {
	out := corev1.ResourceList{}
	if b.CPU.Sign() > 0 {
		out[corev1.ResourceCPU] = b.CPU
	}
	if b.Memory.Sign() > 0 {
		out[corev1.ResourceMemory] = b.Memory
	}
	return out
}

// Admit returns a BudgetExceeded error if c, an instance of tmpl, does not
// fit its participant's budget; otherwise it records c as admitted, which
// the participant's later decisions count until c is installed. An
// admission stands: c is not judged again until it is installed or gone.
func (b *Budget) Admit(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) error {
	if !b.Enabled() {
		return nil
	}
	lock := b.team(c.Spec.Participant)
	lock.Lock()
	defer lock.Unlock()
	if b.isAdmitted(c) {
		return nil
	}
	if err := b.decide(ctx, c, tmpl, true); err != nil {
		return err
	}
	b.record(c.Spec.Participant, c.UID, true)
	return nil
}

// Check returns the error Admit would, recording nothing: the webhook's
// verdict on a Challenge not created yet.
func (b *Budget) Check(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) error {
	if !b.Enabled() {
		return nil
	}
	return b.decide(ctx, c, tmpl, false)
}

// Forget drops c's admission: it was refused since (by the quota).
func (b *Budget) Forget(c *ctfv1alpha1.Challenge) {
	if b.Enabled() {
		b.record(c.Spec.Participant, c.UID, false)
	}
}

// decide prices c and its participant's other Challenges and applies
// CheckBudget. With prune, it drops the admissions it finds installed,
// leaving or refused by their values.
func (b *Budget) decide(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, prune bool) error {
	need, err := b.Cost(c, tmpl)
	if err != nil {
		return err
	}
	var list ctfv1alpha1.ChallengeList
	if err := b.Reader.List(ctx, &list, client.MatchingFields{ParticipantField: c.Spec.Participant}); err != nil {
		return fmt.Errorf("listing Challenges of participant %s: %w", c.Spec.Participant, err)
	}
	if installedAsListed(c, list.Items) {
		// Its admission may be gone already: a decision that saw it
		// installed dropped it.
		return b.judgeRaise(ctx, c, need, list.Items)
	}
	admitted := b.admittedOf(c.Spec.Participant)
	still := map[types.UID]bool{}
	others := make([]Priced, 0, len(list.Items))
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == c.UID || !o.DeletionTimestamp.IsZero() || o.Spec.Participant != c.Spec.Participant {
			continue
		}
		otmpl, cost, ok, err := b.price(ctx, o, c, tmpl)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		p := Priced{Challenge: o, Requests: cost, Admitted: admitted[o.UID] && !lifecycle.Installed(&o.Status)}
		if p.Admitted {
			still[o.UID] = true
		}
		if !p.Admitted && !lifecycle.Installed(&o.Status) && b.Quota != nil {
			p.Refused = CheckQuota(o, otmpl, list.Items, b.Quota.DefaultMax) != nil
		}
		others = append(others, p)
	}
	if prune {
		b.keep(c.Spec.Participant, c.UID, still)
	}
	return CheckBudget(c, need, others, b.limit())
}

// AdmitInstalled returns a BudgetExceeded error if c, an installed
// instance of tmpl, asks for more than its workloads request now and the
// more does not fit its participant's budget beside the other installed
// and admitted instances: a change of a running instance's requests is
// judged as a start is, so that no platform raises one past the budget
// once it runs. The release stays as it was. An instance that asks no
// more than it runs with passes, whatever the budget says now (the admin
// may have lowered it since), as does a claimant, whose pooled instance
// serves it as its template made it.
func (b *Budget) AdmitInstalled(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) error {
	if !b.Enabled() || c.Status.PooledInstance != nil {
		return nil
	}
	need, err := b.Cost(c, tmpl)
	if err != nil {
		return nil //nolint:nilerr // c's own render reports the error
	}
	var list ctfv1alpha1.ChallengeList
	if err := b.Reader.List(ctx, &list, client.MatchingFields{ParticipantField: c.Spec.Participant}); err != nil {
		return fmt.Errorf("listing Challenges of participant %s: %w", c.Spec.Participant, err)
	}
	return b.judgeRaise(ctx, c, need, list.Items)
}

// judgeRaise decides for c, installed, whose instance would now request
// need, from its participant's Challenges (items): within the budget
// beside the installed and admitted ones, or no more than it runs with.
func (b *Budget) judgeRaise(ctx context.Context, c *ctfv1alpha1.Challenge, need corev1.ResourceList, items []ctfv1alpha1.Challenge) error {
	admitted := b.admittedOf(c.Spec.Participant)
	var others []Priced
	for i := range items {
		o := &items[i]
		if o.UID == c.UID || !o.DeletionTimestamp.IsZero() || o.Spec.Participant != c.Spec.Participant {
			continue
		}
		if !lifecycle.Installed(&o.Status) && !admitted[o.UID] {
			continue
		}
		_, cost, ok, err := b.price(ctx, o, c, nil)
		if err != nil {
			return err
		}
		if ok {
			others = append(others, Priced{Challenge: o, Requests: cost, Admitted: !lifecycle.Installed(&o.Status)})
		}
	}
	refusal := CheckBudget(c, need, others, b.limit())
	if refusal == nil {
		return nil
	}
	running, err := runningRequests(ctx, b.Live, c)
	if err != nil {
		return err
	}
	if noMore(need, running, b.limit()) {
		return nil
	}
	var why *lifecycle.ReasonedError
	if !errors.As(refusal, &why) {
		return refusal
	}
	return lifecycle.Errorf(lifecycle.ReasonBudgetExceeded, "%s, and it runs with %s: the change is not applied, the instance runs as it was",
		why.Message, describe(running, b.limit()))
}

// runningRequests is what c's installed instance requests as its
// Deployments stand on the API server (the cache keeps no pod template):
// every container's requests times the replicas.
func runningRequests(ctx context.Context, r client.Reader, c *ctfv1alpha1.Challenge) (corev1.ResourceList, error) {
	var list appsv1.DeploymentList
	if err := r.List(ctx, &list, client.InNamespace(identity.Namespace(c)), client.MatchingLabels{ctfv1alpha1.InstanceLabel: c.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Deployments of %s/%s: %w", c.Namespace, c.Name, err)
	}
	out := corev1.ResourceList{}
	for _, dep := range list.Items {
		replicas := int32(1)
		if dep.Spec.Replicas != nil {
			replicas = *dep.Spec.Replicas
		}
		for _, ctr := range dep.Spec.Template.Spec.Containers {
			for range replicas {
				add(out, ctr.Resources.Requests)
			}
		}
	}
	return out, nil
}

// price is what o, an instance of otmpl, requests; ok is false when it
// would not be installed (its template is gone, its values do not compose):
// it costs nothing then. An installed instance whose values no longer
// compose keeps its release as it was, which cannot be priced: it counts
// nothing either.
func (b *Budget) price(ctx context.Context, o, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) (otmpl *ctfv1alpha1.ChallengeTemplate, cost corev1.ResourceList, ok bool, err error) {
	switch {
	case o.Spec.Template == "":
	case tmpl != nil && o.Spec.Template == c.Spec.Template:
		otmpl = tmpl
	default:
		otmpl = &ctfv1alpha1.ChallengeTemplate{}
		err := b.Reader.Get(ctx, client.ObjectKey{Name: o.Spec.Template}, otmpl)
		if apierrors.IsNotFound(err) {
			return nil, nil, false, nil
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("reading ChallengeTemplate %q: %w", o.Spec.Template, err)
		}
	}
	if cost, err = b.Cost(o, otmpl); err != nil {
		return nil, nil, false, nil //nolint:nilerr // o's own render reports the error; here o only costs nothing
	}
	return otmpl, cost, true, nil
}

// team is the lock of participant's decisions (shared with the
// participants whose names hash alike).
func (b *Budget) team(participant string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(participant))
	return &b.teams[h.Sum32()%uint32(len(b.teams))]
}

func (b *Budget) isAdmitted(c *ctfv1alpha1.Challenge) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.admitted[c.Spec.Participant][c.UID]
}

// admittedOf is a copy of participant's admissions.
func (b *Budget) admittedOf(participant string) map[types.UID]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[types.UID]bool, len(b.admitted[participant]))
	for uid := range b.admitted[participant] {
		out[uid] = true
	}
	return out
}

// record adds or drops an admission.
func (b *Budget) record(participant string, uid types.UID, admitted bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.admitted == nil {
		b.admitted = map[string]map[types.UID]bool{}
	}
	if admitted {
		if b.admitted[participant] == nil {
			b.admitted[participant] = map[types.UID]bool{}
		}
		b.admitted[participant][uid] = true
		return
	}
	delete(b.admitted[participant], uid)
	if len(b.admitted[participant]) == 0 {
		delete(b.admitted, participant)
	}
}

// keep leaves participant the admissions in still, and self's: the others
// are installed, gone or refused. The participant's lock is held, so no
// admission was added since the list was read.
func (b *Budget) keep(participant string, self types.UID, still map[types.UID]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for uid := range b.admitted[participant] {
		if uid != self && !still[uid] {
			delete(b.admitted[participant], uid)
		}
	}
	if len(b.admitted[participant]) == 0 {
		delete(b.admitted, participant)
	}
}

// Priced is one of a participant's Challenges and what its instance requests.
type Priced struct {
	Challenge *ctfv1alpha1.Challenge
	Requests  corev1.ResourceList
	// Admitted tells that this process admitted it within the budget and
	// has not seen it installed: it counts whatever its place in creation
	// order and whatever its status (which may not show the admission yet).
	Admitted bool
	// Refused tells that a rule judged before the budget (the quota)
	// refuses it now: it counts nothing, whatever its status.
	Refused bool
}

// CheckBudget decides whether c, whose instance requests need, fits its
// participant's budget beside others (c may be among them). Installed and
// admitted instances count; then the participant's older Challenges still
// waiting for a decision, in creation order, each as far as it fits (one
// that does not fit is refused in its turn and leaves room for the next);
// then c. Leaving Challenges count nothing, nor do those refused before
// the budget is judged: Refused, or in Error with nothing installed for a
// reason neither the quota nor the budget gives. Those the quota or the
// budget refused when last judged are judged again in their turn (their
// status may be stale: when a team's instance goes, its refused ones are
// judged again all at once), so that room freed goes to the oldest.
func CheckBudget(c *ctfv1alpha1.Challenge, need corev1.ResourceList, others []Priced, budget corev1.ResourceList) error {
	inUse := corev1.ResourceList{}
	var waiting []Priced
	for _, o := range others {
		ch := o.Challenge
		if ch.UID == c.UID || !ch.DeletionTimestamp.IsZero() || ch.Spec.Participant != c.Spec.Participant {
			continue
		}
		switch {
		case lifecycle.Installed(&ch.Status), o.Admitted:
			add(inUse, o.Requests)
		case o.Refused || refusedBeforeBudget(&ch.Status) || !before(ch, c):
		default:
			waiting = append(waiting, o)
		}
	}
	slices.SortFunc(waiting, func(a, b Priced) int {
		switch {
		case before(a.Challenge, b.Challenge):
			return -1
		case before(b.Challenge, a.Challenge):
			return 1
		}
		return 0
	})
	for _, o := range waiting {
		if fits(inUse, o.Requests, budget) {
			add(inUse, o.Requests)
		}
	}
	if fits(inUse, need, budget) {
		return nil
	}
	return lifecycle.Errorf(lifecycle.ReasonBudgetExceeded,
		"participant %s's budget is %s (the operator's --team-budget-cpu and --team-budget-memory); its instances request %s and this one needs %s",
		c.Spec.Participant, describe(budget, budget), describe(inUse, budget), describe(need, budget))
}

// refusedBeforeBudget tells whether a Challenge was refused, with nothing
// installed, by neither the quota nor the budget, which the caller judges
// again (a template or values the operator refuses, a failed install).
func refusedBeforeBudget(st *ctfv1alpha1.ChallengeStatus) bool {
	return st.Phase == ctfv1alpha1.PhaseError && !lifecycle.Installed(st) &&
		st.Reason != lifecycle.ReasonBudgetExceeded && st.Reason != lifecycle.ReasonQuotaExceeded
}

// noMore tells whether need asks no more than running of any resource the
// budget bounds.
func noMore(need, running, budget corev1.ResourceList) bool {
	for name := range budget {
		if q := need[name]; q.Cmp(running[name]) > 0 {
			return false
		}
	}
	return true
}

// fits tells whether inUse plus need is within budget, resource by resource.
func fits(inUse, need, budget corev1.ResourceList) bool {
	for name, limit := range budget {
		sum := inUse[name].DeepCopy()
		sum.Add(need[name])
		if sum.Cmp(limit) > 0 {
			return false
		}
	}
	return true
}

// add adds more to sum, resource by resource.
func add(sum, more corev1.ResourceList) {
	for name, q := range more {
		total := sum[name].DeepCopy()
		total.Add(q)
		sum[name] = total
	}
}

// describe writes the budget's resources of list: "cpu 250m, memory 1Gi".
func describe(list, budget corev1.ResourceList) string {
	names := make([]string, 0, len(budget))
	for name := range budget {
		names = append(names, string(name))
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		q := list[corev1.ResourceName(name)]
		parts[i] = name + " " + q.String()
	}
	return strings.Join(parts, ", ")
}
