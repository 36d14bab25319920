package containment

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.Time{Time: t0.Add(d)} }

var canaries = &Canaries{Namespace: "ctf-pool"}

// template is the template "web" at generation gen, its status's
// conditions conds.
func template(gen int64, conds ...metav1.Condition) *ctfv1alpha1.ChallengeTemplate {
	tmpl := builders.BareTemplate("web")
	tmpl.UID, tmpl.Generation = "uid-web", gen
	tmpl.Status.Conditions = conds
	return tmpl
}

func degraded(gen int64, since time.Duration) metav1.Condition {
	return metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonInstancesFailing, ObservedGeneration: gen, LastTransitionTime: at(since)}
}

func healthy(since time.Duration) metav1.Condition {
	return metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionFalse, Reason: ReasonFailuresBelowThreshold, ObservedGeneration: 1, LastTransitionTime: at(since)}
}

// team is a team's instance admitted at admitted, in phase with reason.
func team(name string, admitted time.Duration, phase ctfv1alpha1.Phase, reason string) ctfv1alpha1.Challenge {
	ch := *builders.FromTemplate("team-a", name, "", "web", builders.Created(at(admitted).Time))
	ch.Status.Phase, ch.Status.Reason, ch.Status.Message = phase, reason, "why "+name
	ch.Status.AdmittedAt = ptr.To(at(admitted))
	if phase == ctfv1alpha1.PhaseRunning {
		ch.Status.ReadyAt = ptr.To(at(admitted + time.Second))
	}
	return ch
}

// asking is ch asking for more CPU than its template gives, through the
// resources its template lets it override.
func asking(ch ctfv1alpha1.Challenge) ctfv1alpha1.Challenge {
	cpu := ctfv1alpha1.Quantity("1900m")
	ch.Spec.Resources = &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: &cpu}}
	return ch
}

// TestOwnFailuresAreSaidApart: the template's condition says how many
// failed of their own asking, which do not hold it.
func TestOwnFailuresAreSaidApart(t *testing.T) {
	g := NewWithT(t)
	d := Decide(template(1, healthy(0)), []ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "ImagePullBackOff"),
		asking(team("b", 2*time.Minute, "Error", "Unschedulable")), asking(team("c", 3*time.Minute, "Error", "Unschedulable"))}, canaries, t0.Add(10*time.Minute))
	g.Expect(d.Degraded.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(d.Health.Failures).To(BeEquivalentTo(1))
	g.Expect(d.Degraded.Message).To(Equal("1 of its newest instances failed in a row; it is held at 3; 2 more failed of their own asking (values of their own), which never hold it"))
}

func TestOwnAsking(t *testing.T) {
	cpu := ctfv1alpha1.Quantity("1")
	for _, tt := range []struct {
		name string
		spec ctfv1alpha1.ChallengeSpec
		own  bool
	}{
		{"a team and its template", ctfv1alpha1.ChallengeSpec{Template: "web", Participant: "team-a"}, false},
		{"a lifetime and a renewal change nothing that runs", ctfv1alpha1.ChallengeSpec{Template: "web", Participant: "team-a",
			Lifetime: &metav1.Duration{Duration: time.Hour}, RenewedAt: ptr.To(at(0))}, false},
		{"empty values, resources and exposure", ctfv1alpha1.ChallengeSpec{Template: "web", Values: &ctfv1alpha1.Values{},
			Resources: &ctfv1alpha1.Resources{}, Expose: &ctfv1alpha1.Expose{}}, false},
		{"an image", ctfv1alpha1.ChallengeSpec{Template: "web", Image: "registry.example/other:1"}, true},
		{"ports", ctfv1alpha1.ChallengeSpec{Template: "web", Ports: []ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1}}}, true},
		{"environment", ctfv1alpha1.ChallengeSpec{Template: "web", Env: []ctfv1alpha1.EnvVar{{Name: "LEVEL", Value: "hard"}}}, true},
		{"resources", ctfv1alpha1.ChallengeSpec{Template: "web", Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: &cpu}}}, true},
		{"an exposure", ctfv1alpha1.ChallengeSpec{Template: "web", Expose: &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeNodePort}}, true},
		{"values", ctfv1alpha1.ChallengeSpec{Template: "web", Values: &ctfv1alpha1.Values{Image: "registry.example/other:1"}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(OwnAsking(&ctfv1alpha1.Challenge{Spec: tt.spec})).To(Equal(tt.own))
		})
	}
}

func canary(tmpl *ctfv1alpha1.ChallengeTemplate, name string, created time.Duration, phase ctfv1alpha1.Phase) ctfv1alpha1.Challenge {
	ch := canaries.New(tmpl)
	ch.Name, ch.CreationTimestamp = name, at(created)
	ch.Status.Phase = phase
	if phase == ctfv1alpha1.PhaseError {
		ch.Status.Reason, ch.Status.Message = "ImagePullBackOff", "back-off pulling"
	}
	return *ch
}

func TestDegradedAfterThresholdFailuresInARow(t *testing.T) {
	for _, tt := range []struct {
		name      string
		tmpl      *ctfv1alpha1.ChallengeTemplate
		instances []ctfv1alpha1.Challenge
		degraded  bool
		failures  int32
	}{
		{"first look: old failures do not hold it", template(1),
			[]ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "ImagePullBackOff"), team("b", time.Minute, "Error", "ImagePullBackOff"), team("c", time.Minute, "Error", "ImagePullBackOff")}, false, 0},
		{"three failures in a row", template(1, healthy(0)),
			[]ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "ImagePullBackOff"), team("b", 2*time.Minute, "Error", "CrashLoopBackOff"), team("c", 3*time.Minute, "Error", "InstallError")}, true, 3},
		{"a Running one between resets the count", template(1, healthy(0)),
			[]ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "ImagePullBackOff"), team("b", 2*time.Minute, "Running", "Ready"), team("c", 3*time.Minute, "Error", "ImagePullBackOff"), team("d", 4*time.Minute, "Error", "ImagePullBackOff")}, false, 2},
		{"refusals of a team's own spec or bounds are not the template's failures", template(1, healthy(0)),
			[]ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "QuotaExceeded"), team("b", 2*time.Minute, "Error", "ValueNotAllowed"), team("c", 3*time.Minute, "Error", "BudgetExceeded"), team("d", 4*time.Minute, "Queued", "Queued")}, false, 0},
		{"a claimant counts through its pooled instance only", template(1, healthy(0)),
			[]ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "ImagePullBackOff"), team("b", 2*time.Minute, "Error", "ImagePullBackOff"), func() ctfv1alpha1.Challenge {
				c := team("c", 3*time.Minute, "Error", "ImagePullBackOff")
				c.Status.PooledInstance = &ctfv1alpha1.PooledInstanceRef{Namespace: "ctf-pool", Name: "b"}
				return c
			}()}, false, 2},
		{"failures of a Challenge's own asking are not the template's", template(1, healthy(0)),
			[]ctfv1alpha1.Challenge{asking(team("a", time.Minute, "Error", "Unschedulable")), asking(team("b", 2*time.Minute, "Error", "Unschedulable")), asking(team("c", 3*time.Minute, "Error", "InstallError"))}, false, 0},
		{"a plain instance's failures count across one's own", template(1, healthy(0)),
			[]ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "ImagePullBackOff"), asking(team("b", 2*time.Minute, "Error", "Unschedulable")), team("b2", 150*time.Second, "Error", "ImagePullBackOff"), team("c", 3*time.Minute, "Error", "InstallError")}, true, 3},
		{"threshold 0 never holds", func() *ctfv1alpha1.ChallengeTemplate {
			tm := template(1, healthy(0))
			tm.Spec.Failures = &ctfv1alpha1.FailurePolicy{Threshold: ptr.To[int32](0)}
			return tm
		}(), []ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "ImagePullBackOff"), team("b", 2*time.Minute, "Error", "ImagePullBackOff"), team("c", 3*time.Minute, "Error", "ImagePullBackOff")}, false, 3},
		{"a higher threshold", func() *ctfv1alpha1.ChallengeTemplate {
			tm := template(1, healthy(0))
			tm.Spec.Failures = &ctfv1alpha1.FailurePolicy{Threshold: ptr.To[int32](4)}
			return tm
		}(), []ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "ImagePullBackOff"), team("b", 2*time.Minute, "Error", "ImagePullBackOff"), team("c", 3*time.Minute, "Error", "ImagePullBackOff")}, false, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := Decide(tt.tmpl, tt.instances, canaries, t0.Add(10*time.Minute))
			g.Expect(d.Degraded.Status == metav1.ConditionTrue).To(Equal(tt.degraded), d.Degraded.Message)
			g.Expect(d.Health.Failures).To(Equal(tt.failures))
			g.Expect(d.Create).To(BeNil(), "the first canary waits")
			if tt.degraded {
				g.Expect(d.Degraded.Message).To(ContainSubstring("the latest with InstallError: why c"))
				g.Expect(d.Event.Reason).To(Equal(ConditionDegraded))
				g.Expect(d.Health.NextCanaryAt.Time).To(Equal(t0.Add(10*time.Minute + FirstCanaryAfter)))
			}
		})
	}
}

// TestCanaries walks a Degraded template through its canaries: the first
// after FirstCanaryAfter, a failed one deleted and the next twice as late,
// one not Running within CanaryTimeout failed, one for an older generation
// replaced at once after an edit, and the one that runs lifting the hold.
func TestCanaries(t *testing.T) {
	g := NewWithT(t)
	tmpl := template(1, degraded(1, 0))
	tmpl.Status.Health = &ctfv1alpha1.TemplateHealth{Failures: 3, NextCanaryAt: ptr.To(at(FirstCanaryAfter))}

	d := Decide(tmpl, nil, canaries, t0.Add(10*time.Second))
	g.Expect(d.Create).To(BeNil())
	g.Expect(d.RequeueAfter).To(Equal(20 * time.Second))

	d = Decide(tmpl, nil, canaries, t0.Add(FirstCanaryAfter))
	g.Expect(d.Create).NotTo(BeNil())
	g.Expect(d.Create.Namespace).To(Equal("ctf-pool"))
	g.Expect(d.Create.Labels).To(HaveKeyWithValue(ctfv1alpha1.CanaryLabel, "web"))
	g.Expect(d.Create.Spec.Participant).To(Equal(d.Create.Name), "no team's")
	g.Expect(canaries.Is(d.Create)).To(BeTrue())
	g.Expect(d.Health.Canary).To(Equal(d.Create.Name))
	tmpl.Status.Health = &d.Health

	// Not cached yet: no second one.
	d = Decide(tmpl, nil, canaries, t0.Add(FirstCanaryAfter+time.Second))
	g.Expect(d.Create).To(BeNil())
	g.Expect(d.Delete).To(BeEmpty())

	failing := canary(tmpl, tmpl.Status.Health.Canary, FirstCanaryAfter, ctfv1alpha1.PhaseError)
	d = Decide(tmpl, []ctfv1alpha1.Challenge{failing}, canaries, t0.Add(time.Minute))
	g.Expect(d.Delete).To(ConsistOf(HaveField("Name", failing.Name)))
	g.Expect(*d.Ran).To(BeFalse())
	g.Expect(d.Health.CanaryAttempts).To(BeEquivalentTo(1))
	g.Expect(d.Health.NextCanaryAt.Time).To(Equal(t0.Add(time.Minute + 2*FirstCanaryAfter)))
	g.Expect(d.Event.Message).To(ContainSubstring("ImagePullBackOff: back-off pulling"))
	g.Expect(d.Degraded.Status).To(Equal(metav1.ConditionTrue))
	tmpl.Status.Health = &d.Health

	// The next canary never reaches Running: given up after CanaryTimeout.
	d = Decide(tmpl, nil, canaries, t0.Add(2*time.Minute))
	g.Expect(d.Create).NotTo(BeNil())
	tmpl.Status.Health = &d.Health
	slow := canary(tmpl, d.Create.Name, 2*time.Minute, ctfv1alpha1.PhasePending)
	d = Decide(tmpl, []ctfv1alpha1.Challenge{slow}, canaries, t0.Add(3*time.Minute))
	g.Expect(d.Delete).To(BeEmpty())
	g.Expect(d.RequeueAfter).To(Equal(CanaryTimeout - time.Minute))
	d = Decide(tmpl, []ctfv1alpha1.Challenge{slow}, canaries, t0.Add(2*time.Minute+CanaryTimeout))
	g.Expect(d.Delete).To(ConsistOf(HaveField("Name", slow.Name)))
	g.Expect(d.Event.Message).To(ContainSubstring("not Running within 5m0s"))
	g.Expect(d.Health.CanaryAttempts).To(BeEquivalentTo(2))
	g.Expect(d.RequeueAfter).To(Equal(4 * FirstCanaryAfter))
	tmpl.Status.Health = &d.Health

	// The organiser edits the template: a canary at once, the old one gone.
	old := canary(tmpl, "web-canary-old", 8*time.Minute, ctfv1alpha1.PhasePending)
	tmpl.Generation = 2
	d = Decide(tmpl, []ctfv1alpha1.Challenge{old}, canaries, t0.Add(9*time.Minute))
	g.Expect(d.Delete).To(ConsistOf(HaveField("Name", "web-canary-old")))
	g.Expect(d.Create).NotTo(BeNil())
	g.Expect(d.Create.Annotations).To(HaveKeyWithValue(ctfv1alpha1.TemplateGenerationAnnotation, "2"))
	g.Expect(d.Health.CanaryAttempts).To(BeZero())
	g.Expect(d.Degraded.ObservedGeneration).To(BeEquivalentTo(2))
	tmpl.Status.Health, tmpl.Status.Conditions = &d.Health, []metav1.Condition{d.Degraded}

	ran := canary(tmpl, d.Create.Name, 9*time.Minute, ctfv1alpha1.PhaseRunning)
	d = Decide(tmpl, []ctfv1alpha1.Challenge{ran}, canaries, t0.Add(10*time.Minute))
	g.Expect(d.Degraded.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(d.Degraded.Reason).To(Equal(ReasonCanaryRan))
	g.Expect(d.Delete).To(ConsistOf(HaveField("Name", ran.Name)), "its work is done")
	g.Expect(*d.Ran).To(BeTrue())
	g.Expect(d.Health).To(Equal(ctfv1alpha1.TemplateHealth{}))
}

// TestLiftedHoldCountsAfresh: once a canary ran, the failures before the
// lifting no longer count, and a canary left over is deleted.
func TestLiftedHoldCountsAfresh(t *testing.T) {
	g := NewWithT(t)
	lifted := metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionFalse, Reason: ReasonCanaryRan, ObservedGeneration: 1, LastTransitionTime: at(5 * time.Minute)}
	tmpl := template(1, lifted)
	leftover := canary(tmpl, "web-canary-x", 4*time.Minute, ctfv1alpha1.PhaseRunning)
	before := []ctfv1alpha1.Challenge{team("a", time.Minute, "Error", "ImagePullBackOff"), team("b", 2*time.Minute, "Error", "ImagePullBackOff"), team("c", 3*time.Minute, "Error", "ImagePullBackOff")}
	d := Decide(tmpl, append(before, leftover), canaries, t0.Add(6*time.Minute))
	g.Expect(d.Degraded.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(d.Health.Failures).To(BeZero())
	g.Expect(d.Delete).To(ConsistOf(HaveField("Name", "web-canary-x")))
	g.Expect(d.Degraded.Reason).To(Equal(ReasonCanaryRan), "how it was lifted, until a failure")

	failing := team("d", 7*time.Minute, "Error", "ImagePullBackOff")
	d = Decide(tmpl, append(before, failing), canaries, t0.Add(8*time.Minute))
	g.Expect(d.Health.Failures).To(BeEquivalentTo(1))
	g.Expect(d.Degraded.Reason).To(Equal(ReasonFailuresBelowThreshold))
}

// TestWithoutCanaries: with no canary namespace, an edit lifts the hold.
func TestWithoutCanaries(t *testing.T) {
	g := NewWithT(t)
	tmpl := template(1, degraded(1, 0))
	d := Decide(tmpl, nil, nil, t0.Add(time.Hour))
	g.Expect(d.Degraded.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(d.Create).To(BeNil())
	tmpl.Generation = 2
	d = Decide(tmpl, nil, nil, t0.Add(time.Hour))
	g.Expect(d.Degraded.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(d.Degraded.Reason).To(Equal(ReasonTemplateEdited))
}

// TestCanaryIdentity: a label alone makes no canary; nor does one outside
// the canary namespace or not owned by its template.
func TestCanaryIdentity(t *testing.T) {
	g := NewWithT(t)
	tmpl := template(1)
	genuine := canaries.New(tmpl)
	g.Expect(canaries.Is(genuine)).To(BeTrue())
	elsewhere := genuine.DeepCopy()
	elsewhere.Namespace = "team-a"
	g.Expect(canaries.Is(elsewhere)).To(BeFalse())
	unowned := genuine.DeepCopy()
	unowned.OwnerReferences = nil
	g.Expect(canaries.Is(unowned)).To(BeFalse())
	other := genuine.DeepCopy()
	other.Spec.Template = "pwn"
	g.Expect(canaries.Is(other)).To(BeFalse())
	g.Expect((*Canaries)(nil).Is(genuine)).To(BeFalse())
}

func TestCanaryInterval(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CanaryInterval(0)).To(Equal(30 * time.Second))
	g.Expect(CanaryInterval(1)).To(Equal(time.Minute))
	g.Expect(CanaryInterval(4)).To(Equal(8 * time.Minute))
	g.Expect(CanaryInterval(5)).To(Equal(MaxCanaryInterval))
	g.Expect(CanaryInterval(100)).To(Equal(MaxCanaryInterval))
}

func TestHold(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Hold(template(1, healthy(0)))).To(Succeed())
	err := Hold(template(1, degraded(1, 0)))
	g.Expect(err).To(MatchError(ContainSubstring("Queued: the challenge is Degraded")))
}
