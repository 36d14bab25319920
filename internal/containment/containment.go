// Package containment keeps one template's failures from becoming every
// team's. It counts a template's newest instances that failed, decides when
// the template is Degraded (its new starts then wait, Queued), when the
// operator tries a canary instance of its own, and when a canary that runs
// lifts the hold. Decide is a pure function of the template, its instances
// and the time; the controller reads and writes the cluster.
package containment

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// The template conditions that hold its new starts: Degraded, and
// SolverHealthy False when its solver check pauses it.
const (
	ConditionDegraded      = "Degraded"
	ConditionSolverHealthy = "SolverHealthy"
)

// The Degraded condition's reasons, and the Events'.
const (
	// ReasonInstancesFailing: threshold of its newest instances failed in a row.
	ReasonInstancesFailing = "InstancesFailing"
	// ReasonFailuresBelowThreshold: not Degraded.
	ReasonFailuresBelowThreshold = "FailuresBelowThreshold"
	// ReasonCanaryRan: a canary ran, the hold is lifted.
	ReasonCanaryRan = "CanaryRan"
	// ReasonCanaryFailed: a canary failed or did not run in time; the next
	// waits twice as long.
	ReasonCanaryFailed = "CanaryFailed"
	// ReasonTemplateEdited: the organiser edited a Degraded template, which
	// lifts the hold where the operator has no canary namespace.
	ReasonTemplateEdited = "TemplateEdited"
)

// The canaries' timing: the first waits FirstCanaryAfter (the failures
// that made the template Degraded are fresh: trying again at once would
// fail too), each failure doubles the wait up to MaxCanaryInterval, and a
// canary not Running within CanaryTimeout has failed.
const (
	FirstCanaryAfter  = 30 * time.Second
	MaxCanaryInterval = 10 * time.Minute
	CanaryTimeout     = 5 * time.Minute
)

// CanaryInterval is the wait before the next canary after attempts failed.
func CanaryInterval(attempts int32) time.Duration {
	d := FirstCanaryAfter
	for range attempts {
		if d *= 2; d >= MaxCanaryInterval {
			return MaxCanaryInterval
		}
	}
	return d
}

// Canaries are the operator's canary instances: Challenges in one
// namespace (--canary-namespace), labelled and owned by their template. A
// nil *Canaries, or one without a namespace, has none: a Degraded template
// is then lifted by the organiser's next edit.
type Canaries struct {
	Namespace string
}

// Enabled tells whether canaries are tried.
func (c *Canaries) Enabled() bool { return c != nil && c.Namespace != "" }

// Is tells whether ch is a canary: in the canary namespace (where no
// platform may create anything), labelled with its template, which
// controls it. A label alone proves nothing.
func (c *Canaries) Is(ch *ctfv1alpha1.Challenge) bool {
	return c.Enabled() && ch.Namespace == c.Namespace && ownedCanary(ch, ch.Labels[ctfv1alpha1.CanaryLabel])
}

// IsSolver tells whether ch is the canary a template's solver check runs
// against: in the canary namespace, labelled with its template, which
// controls it.
func (c *Canaries) IsSolver(ch *ctfv1alpha1.Challenge) bool {
	return c.Enabled() && ch.Namespace == c.Namespace && ownedCanary(ch, ch.Labels[ctfv1alpha1.SolverCanaryLabel])
}

// IsAny tells whether ch is either kind of canary: the operator's own
// instance, which takes no place among its template's (a shared one's one
// instance, a per-team one's maxInstances) and is no team's.
func (c *Canaries) IsAny(ch *ctfv1alpha1.Challenge) bool {
	return c.Is(ch) || c.IsSolver(ch)
}

// ownedCanary tells whether ch is an instance of template, which controls it.
func ownedCanary(ch *ctfv1alpha1.Challenge, template string) bool {
	owner := metav1.GetControllerOf(ch)
	return template != "" && template == ch.Spec.Template && owner != nil &&
		owner.Kind == "ChallengeTemplate" && owner.Name == template
}

// NewSolver is the canary tmpl's solver check runs against: like a
// containment canary, no team's, but long-lived, and one that may claim
// a pooled instance (taken from the pool where there is one).
func (c *Canaries) NewSolver(tmpl *ctfv1alpha1.ChallengeTemplate) *ctfv1alpha1.Challenge {
	return identity.OperatorChallenge(tmpl, c.Namespace, "solver", ctfv1alpha1.SolverCanaryLabel)
}

// New is a canary of tmpl: its participant is its own name, so that no
// team's quota counts it; the template owns it.
func (c *Canaries) New(tmpl *ctfv1alpha1.ChallengeTemplate) *ctfv1alpha1.Challenge {
	return identity.OperatorChallenge(tmpl, c.Namespace, "canary", ctfv1alpha1.CanaryLabel)
}

// Degraded tells whether tmpl's new starts are held.
func Degraded(tmpl *ctfv1alpha1.ChallengeTemplate) bool {
	return tmpl != nil && apimeta.IsStatusConditionTrue(tmpl.Status.Conditions, ConditionDegraded)
}

// Hold is the Queued error of a new install of tmpl while it is Degraded,
// nil otherwise. It names no other team's instance and none of their
// errors: the team sees why it waits, the organiser the rest on the
// template.
func Hold(tmpl *ctfv1alpha1.ChallengeTemplate) error {
	if !Degraded(tmpl) {
		return nil
	}
	return lifecycle.Errorf(lifecycle.ReasonQueued,
		"the challenge is Degraded: its newest instances keep failing, so this start waits until a trial instance of the operator's runs, then goes ahead")
}

// Paused tells whether tmpl's solver check fails and its organiser chose
// to pause it.
func Paused(tmpl *ctfv1alpha1.ChallengeTemplate) bool {
	return tmpl != nil && tmpl.Spec.SolverCheck != nil && tmpl.Spec.SolverCheck.OnFailure == ctfv1alpha1.SolverFailurePause &&
		apimeta.IsStatusConditionFalse(tmpl.Status.Conditions, ConditionSolverHealthy)
}

// Pause is the Queued error of a team's new start or claim of tmpl while
// it is paused, nil otherwise.
func Pause(tmpl *ctfv1alpha1.ChallengeTemplate) error {
	if !Paused(tmpl) {
		return nil
	}
	return lifecycle.Errorf(lifecycle.ReasonQueued,
		"the challenge is paused: the organisers' solver no longer solves it, so this start waits until it does again, then goes ahead")
}

// Event is what Decide says happened, for an Event on the template.
type Event struct {
	Type, Reason, Message string
}

// Decision is what to do for one template.
type Decision struct {
	// Degraded is the condition to set (its generation included).
	Degraded metav1.Condition
	// Health is the template's status.health.
	Health ctfv1alpha1.TemplateHealth
	// Create is a canary to create, nil for none.
	Create *ctfv1alpha1.Challenge
	// Delete are canaries to delete: one that ran or failed, one for an
	// older generation, one too many.
	Delete []*ctfv1alpha1.Challenge
	// Event is nil when nothing an organiser should hear of changed.
	Event *Event
	// Ran says a canary ran (true) or failed (false), nil if neither: for
	// the metrics.
	Ran *bool
	// RequeueAfter is when to look again with nothing else happening.
	RequeueAfter time.Duration
}

// Decide is the next step for tmpl from its instances (every Challenge of
// it, canaries among them) at now.
func Decide(tmpl *ctfv1alpha1.ChallengeTemplate, instances []ctfv1alpha1.Challenge, canaries *Canaries, now time.Time) Decision {
	j := judgement{tmpl: tmpl, canaries: canaries, now: now,
		cond:   apimeta.FindStatusCondition(tmpl.Status.Conditions, ConditionDegraded),
		health: ptr.Deref(tmpl.Status.Health, ctfv1alpha1.TemplateHealth{})}
	for i := range instances {
		if ch := &instances[i]; canaries.Is(ch) {
			j.current = append(j.current, ch)
		}
	}
	j.failures, j.last, j.own = failed(instances, canaries, lastGood(instances, j.cond, now))
	if j.cond == nil || j.cond.Status != metav1.ConditionTrue {
		return j.notDegraded()
	}
	return j.degraded()
}

// judgement is what Decide weighs.
type judgement struct {
	tmpl     *ctfv1alpha1.ChallengeTemplate
	canaries *Canaries
	now      time.Time
	// cond is the Degraded condition, nil before the first look.
	cond   *metav1.Condition
	health ctfv1alpha1.TemplateHealth
	// current are the template's canaries.
	current []*ctfv1alpha1.Challenge
	// failures in a row, the latest of them last.
	failures int32
	last     *ctfv1alpha1.Challenge
	// own are the failures since of instances that asked for something of
	// their own (OwnAsking), which are not the template's.
	own int32
}

func (j *judgement) condition(status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: ConditionDegraded, Status: status, Reason: reason, Message: message, ObservedGeneration: j.tmpl.Generation}
}

// notDegraded decides for a template whose starts go ahead: whether its
// failures now hold them.
func (j *judgement) notDegraded() Decision {
	threshold := j.tmpl.Spec.FailureThreshold()
	d := Decision{Health: ctfv1alpha1.TemplateHealth{Failures: j.failures}, Delete: j.current} // a canary left over from a hold lifted before a restart
	if threshold == 0 || j.failures < threshold {
		msg := fmt.Sprintf("%d of its newest instances failed in a row; it is held at %d", j.failures, threshold)
		if threshold == 0 {
			msg = "its failures never hold its starts (spec.failures.threshold 0)"
		} else if j.own > 0 {
			msg += fmt.Sprintf("; %d more failed of their own asking (values of their own), which never hold it", j.own)
		}
		d.Degraded = j.condition(metav1.ConditionFalse, ReasonFailuresBelowThreshold, msg)
		if j.failures == 0 && j.cond != nil && (j.cond.Reason == ReasonCanaryRan || j.cond.Reason == ReasonTemplateEdited) {
			// How the last hold was lifted says more, until a failure.
			d.Degraded.Reason, d.Degraded.Message = j.cond.Reason, j.cond.Message
		}
		return d
	}
	msg := fmt.Sprintf("%d of its newest instances failed in a row, the latest with %s: %s; new starts wait",
		j.failures, j.last.Status.Reason, j.last.Status.Message)
	if j.canaries.Enabled() {
		msg += " until a canary instance runs"
		d.Health.NextCanaryAt = &metav1.Time{Time: j.now.Add(FirstCanaryAfter)}
		d.RequeueAfter = FirstCanaryAfter
	} else {
		msg += " until the template is edited (the operator has no canary namespace)"
	}
	d.Degraded = j.condition(metav1.ConditionTrue, ReasonInstancesFailing, msg)
	d.Event = &Event{"Warning", ConditionDegraded, msg}
	return d
}

// degraded decides for a held template: an edit of it is worth a canary at
// once (or, with no canaries, lifts it); a canary's outcome is weighed.
func (j *judgement) degraded() Decision {
	gen := j.tmpl.Generation
	edited := j.cond.ObservedGeneration != gen
	d := Decision{Degraded: *j.cond, Health: j.health}
	d.Health.Failures = j.failures
	if edited {
		d.Degraded.ObservedGeneration = gen
		d.Health.CanaryAttempts, d.Health.NextCanaryAt = 0, &metav1.Time{Time: j.now}
		if !j.canaries.Enabled() {
			msg := "the template was edited: its starts go ahead"
			return Decision{Degraded: j.condition(metav1.ConditionFalse, ReasonTemplateEdited, msg), Event: &Event{"Normal", ReasonTemplateEdited, msg}}
		}
	}
	if !j.canaries.Enabled() {
		return d
	}
	var trial *ctfv1alpha1.Challenge
	for _, ch := range j.current {
		switch {
		case ch.Annotations[ctfv1alpha1.TemplateGenerationAnnotation] != fmt.Sprint(gen):
			d.Delete = append(d.Delete, ch) // tried an older template
		case trial == nil && (j.health.Canary == "" || ch.Name == j.health.Canary):
			trial = ch
		default:
			d.Delete = append(d.Delete, ch)
		}
	}
	switch {
	case trial != nil:
		j.weigh(&d, trial)
	case j.health.Canary != "" && !edited && j.now.Before(ptr.Deref(j.health.NextCanaryAt, metav1.Time{}).Time):
		d.RequeueAfter = j.health.NextCanaryAt.Sub(j.now) // created, not in the cache yet
	case j.health.Canary != "" && !edited:
		j.canaryFailed(&d, nil, "it was deleted") // from under the operator
	case d.Health.NextCanaryAt != nil && j.now.Before(d.Health.NextCanaryAt.Time):
		d.RequeueAfter = d.Health.NextCanaryAt.Sub(j.now)
	default:
		d.Create = j.canaries.New(j.tmpl)
		d.Health.Canary, d.Health.NextCanaryAt = d.Create.Name, &metav1.Time{Time: j.now.Add(CanaryTimeout)}
		d.RequeueAfter = CanaryTimeout
	}
	return d
}

// weigh decides on a canary being tried: it ran (the hold is lifted), it
// failed or is out of time (the next waits longer), or it is waited for.
func (j *judgement) weigh(d *Decision, trial *ctfv1alpha1.Challenge) {
	deadline := trial.CreationTimestamp.Add(CanaryTimeout)
	switch {
	case trial.Status.Phase == ctfv1alpha1.PhaseRunning:
		msg := fmt.Sprintf("canary instance %s/%s ran: the held starts go ahead", trial.Namespace, trial.Name)
		d.Degraded = j.condition(metav1.ConditionFalse, ReasonCanaryRan, msg)
		d.Health = ctfv1alpha1.TemplateHealth{}
		d.Delete = append(d.Delete, trial)
		d.Event = &Event{"Normal", ReasonCanaryRan, msg}
		d.Ran = ptr.To(true)
	case trial.Status.Phase == ctfv1alpha1.PhaseError:
		j.canaryFailed(d, trial, trial.Status.Reason+": "+trial.Status.Message)
	case !j.now.Before(deadline):
		j.canaryFailed(d, trial, fmt.Sprintf("not Running within %s", CanaryTimeout))
	default:
		d.Health.Canary, d.Health.NextCanaryAt = trial.Name, &metav1.Time{Time: deadline}
		d.RequeueAfter = deadline.Sub(j.now)
	}
}

// canaryFailed records a failed canary (trial, nil if it is gone) and
// schedules the next, twice as late as the last.
func (j *judgement) canaryFailed(d *Decision, trial *ctfv1alpha1.Challenge, why string) {
	d.Health.CanaryAttempts++
	wait := CanaryInterval(d.Health.CanaryAttempts)
	name := j.health.Canary
	if trial != nil {
		name = trial.Name
		d.Delete = append(d.Delete, trial)
	}
	d.Health.Canary, d.Health.NextCanaryAt = "", &metav1.Time{Time: j.now.Add(wait)}
	d.Event = &Event{"Warning", ReasonCanaryFailed, fmt.Sprintf("canary instance %s/%s failed (%s); the next in %s", j.canaries.Namespace, name, why, wait)}
	d.Ran = ptr.To(false)
	d.RequeueAfter = wait
}

// lastGood is when the template last showed it can run: the latest of its
// instances' first Running and of the hold's lifting (the Degraded
// condition's last turn to False). Failures before it are not the
// template's current state. A template never judged yet (its first look,
// or the first after an upgrade of the operator) starts from now: old
// failures do not hold it at once.
func lastGood(instances []ctfv1alpha1.Challenge, cond *metav1.Condition, now time.Time) time.Time {
	if cond == nil {
		return now
	}
	var t time.Time
	if cond.Status == metav1.ConditionFalse {
		t = cond.LastTransitionTime.Time
	}
	for i := range instances {
		if at := instances[i].Status.ReadyAt; at != nil && at.After(t) {
			t = at.Time
		}
	}
	return t
}

// failed counts the instances started since since that failed, and
// returns the latest of them; own counts apart those that failed of their
// own asking (OwnAsking). A claimant shows its pooled instance's status,
// which counts for itself; a canary counts only for the hold it tries to
// lift, and the solver's for its check.
func failed(instances []ctfv1alpha1.Challenge, canaries *Canaries, since time.Time) (n int32, last *ctfv1alpha1.Challenge, own int32) {
	for i := range instances {
		ch := &instances[i]
		if ch.Status.PooledInstance != nil || canaries.IsAny(ch) || !lifecycle.InstanceFailed(&ch.Status) {
			continue
		}
		started := startedAt(ch)
		if started.Before(since) { // the API's times are whole seconds: one of the same second counts
			continue
		}
		if OwnAsking(ch) {
			own++
			continue
		}
		n++
		if last == nil || started.After(startedAt(last)) {
			last = ch
		}
	}
	return n, last, own
}

// OwnAsking tells whether ch asks for something of its own that changes
// what runs, beside its template: an image, ports, environment, resources,
// an exposure or values (only what the template's overridableValues
// open). Its failure may then be its asking's (a request no node can
// satisfy, values the chart or the cluster refuses), the same for no
// other team: its own Error, never its template's hold. A plain instance
// of the template (the instancer's, a pool's, a platform's that sets only
// its team, its lifetime and its renewals, which change nothing that runs)
// runs what every team's does, so its failure is the template's.
func OwnAsking(ch *ctfv1alpha1.Challenge) bool {
	s := &ch.Spec
	return s.Image != "" || len(s.Ports) > 0 || len(s.Env) > 0 ||
		(s.Resources != nil && !equality.Semantic.DeepEqual(*s.Resources, ctfv1alpha1.Resources{})) ||
		(s.Expose != nil && !equality.Semantic.DeepEqual(*s.Expose, ctfv1alpha1.Expose{})) ||
		(s.Values != nil && !equality.Semantic.DeepEqual(*s.Values, ctfv1alpha1.Values{}))
}

func startedAt(ch *ctfv1alpha1.Challenge) time.Time {
	if ch.Status.AdmittedAt != nil {
		return ch.Status.AdmittedAt.Time
	}
	return ch.CreationTimestamp.Time
}
