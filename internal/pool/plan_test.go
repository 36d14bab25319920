package pool

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// epoch is when the oldest pooled instance of a test was created.
var epoch = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// testTemplate is the template "web" at generation 2, with a pool of
// min..max (none when max is 0).
func testTemplate(minSize, maxSize int32) *ctfv1alpha1.ChallengeTemplate {
	tmpl := builders.BareTemplate("web", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		if maxSize > 0 {
			s.Pool = &ctfv1alpha1.PoolSpec{Min: minSize, Max: maxSize}
		}
	})
	tmpl.Generation = 2
	return tmpl
}

// testPooled is an unclaimed, Pending pooled instance of "web" in the pool
// namespace "pool", made for generation 2, created age minutes after epoch,
// changed by each option.
func testPooled(name string, age int, options ...func(*ctfv1alpha1.Challenge)) ctfv1alpha1.Challenge {
	return *builders.FromTemplate("pool", name, name, "web", append([]builders.ChallengeEdit{
		builders.UID("uid-" + name), builders.Created(epoch.Add(time.Duration(age) * time.Minute)),
		builders.Labelled(ctfv1alpha1.PoolLabel, "web"), builders.Annotated(ctfv1alpha1.TemplateGenerationAnnotation, "2"),
		func(ch *ctfv1alpha1.Challenge) { ch.Status.Phase = ctfv1alpha1.PhasePending },
	}, options...)...)
}

func running(ch *ctfv1alpha1.Challenge) { ch.Status.Phase = ctfv1alpha1.PhaseRunning }

func generation(g int) func(*ctfv1alpha1.Challenge) {
	return func(ch *ctfv1alpha1.Challenge) {
		ch.Annotations[ctfv1alpha1.TemplateGenerationAnnotation] = fmt.Sprint(g)
	}
}

func claimedByTeam(ch *ctfv1alpha1.Challenge) {
	ch.Annotations[ctfv1alpha1.ClaimantAnnotation] = "team-a/web/uid-claimant"
	ch.Labels[ctfv1alpha1.ClaimedLabel] = "true"
}

func leaving(ch *ctfv1alpha1.Challenge) {
	now := metav1.NewTime(epoch)
	ch.DeletionTimestamp = &now
}

// planSummary is a Plan by the names of the instances it names.
type planSummary struct {
	Claimed                    []string
	Replace                    []string
	ReplaceReason, ReplaceNote string
	Add                        int32
	Shrink                     []string
	ShrinkReason               string
	Status                     *ctfv1alpha1.PoolStatus
	RequeueAfter               time.Duration
}

func summarise(p Plan) planSummary {
	names := func(pooled []*ctfv1alpha1.Challenge) []string {
		var out []string
		for _, ch := range pooled {
			out = append(out, ch.Name)
		}
		return out
	}
	return planSummary{
		Claimed: names(p.Claimed),
		Replace: names(p.Replace.Pooled), ReplaceReason: p.Replace.Reason, ReplaceNote: p.Replace.Note,
		Add:    p.Add,
		Shrink: names(p.Shrink.Pooled), ShrinkReason: p.Shrink.Reason,
		Status: p.Status, RequeueAfter: p.RequeueAfter,
	}
}

// TestPlanPool: what one reconcile of a pool creates, deletes and writes,
// for every shape of pool it can find.
func TestPlanPool(t *testing.T) {
	replaced := func(names ...string) planSummary {
		return planSummary{Replace: names, ReplaceReason: ReasonReplaced, ReplaceNote: noteReplaced}
	}
	status := func(size, ready, target int32) *ctfv1alpha1.PoolStatus {
		return &ctfv1alpha1.PoolStatus{Size: size, Ready: ready, Target: target}
	}
	tests := []struct {
		name   string
		tmpl   *ctfv1alpha1.ChallengeTemplate
		items  []ctfv1alpha1.Challenge
		target int32
		want   planSummary
	}{
		{
			name: "an empty pool is filled to its min", tmpl: testTemplate(2, 5), target: 2,
			want: withSummary(replaced(), func(s *planSummary) { s.Add = 2; s.Status = status(2, 0, 2) }),
		},
		{
			name: "an empty pool is filled to a demand above its min, and looked at again in a minute", tmpl: testTemplate(2, 5), target: 4,
			want: withSummary(replaced(), func(s *planSummary) { s.Add = 4; s.Status = status(4, 0, 4); s.RequeueAfter = time.Minute }),
		},
		{
			name: "a full pool of ready instances is left as it is", tmpl: testTemplate(2, 5), target: 2,
			items: []ctfv1alpha1.Challenge{testPooled("a", 0, running), testPooled("b", 1, running)},
			want:  withSummary(replaced(), func(s *planSummary) { s.Status = status(2, 2, 2) }),
		},
		{
			name: "a full pool counts as ready only its Running instances", tmpl: testTemplate(2, 5), target: 2,
			items: []ctfv1alpha1.Challenge{testPooled("a", 0, running), testPooled("b", 1)},
			want:  withSummary(replaced(), func(s *planSummary) { s.Status = status(2, 1, 2) }),
		},
		{
			name: "a pool short of its target grows by the difference", tmpl: testTemplate(1, 5), target: 3,
			items: []ctfv1alpha1.Challenge{testPooled("a", 0, running)},
			want:  withSummary(replaced(), func(s *planSummary) { s.Add = 2; s.Status = status(3, 1, 3); s.RequeueAfter = time.Minute }),
		},
		{
			name: "a surplus goes furthest from ready first, then newest first", tmpl: testTemplate(1, 5), target: 1,
			items: []ctfv1alpha1.Challenge{
				testPooled("running-old", 0, running), testPooled("pending-old", 1),
				testPooled("running-new", 2, running), testPooled("pending-new", 3),
			},
			want: withSummary(replaced(), func(s *planSummary) {
				s.Shrink = []string{"pending-new", "pending-old", "running-new"}
				s.ShrinkReason = ReasonShrunk
				s.Status = status(1, 1, 1)
			}),
		},
		{
			name: "a surplus of ready instances loses the newest", tmpl: testTemplate(2, 5), target: 2,
			items: []ctfv1alpha1.Challenge{
				testPooled("b", 1, running), testPooled("d", 3, running), testPooled("a", 0, running), testPooled("c", 2, running),
			},
			want: withSummary(replaced(), func(s *planSummary) {
				s.Shrink = []string{"d", "c"}
				s.ShrinkReason = ReasonShrunk
				s.Status = status(2, 2, 2)
			}),
		},
		{
			name: "instances made for an older generation are replaced", tmpl: testTemplate(2, 5), target: 2,
			items: []ctfv1alpha1.Challenge{testPooled("old-a", 0, running, generation(1)), testPooled("old-b", 1, running, generation(1))},
			want:  withSummary(replaced("old-a", "old-b"), func(s *planSummary) { s.Add = 2; s.Status = status(2, 0, 2) }),
		},
		{
			name: "an instance made for a newer generation than the template read is replaced too", tmpl: testTemplate(1, 5), target: 1,
			items: []ctfv1alpha1.Challenge{testPooled("ahead", 0, running, generation(3))},
			want:  withSummary(replaced("ahead"), func(s *planSummary) { s.Add = 1; s.Status = status(1, 0, 1) }),
		},
		{
			name: "a stale instance is replaced beside current ones, which alone count", tmpl: testTemplate(2, 5), target: 2,
			items: []ctfv1alpha1.Challenge{testPooled("old", 0, running, generation(1)), testPooled("new", 1, running)},
			want:  withSummary(replaced("old"), func(s *planSummary) { s.Add = 1; s.Status = status(2, 1, 2) }),
		},
		{
			name: "a template without a pool any more loses every unclaimed instance and its status", tmpl: testTemplate(0, 0), target: 3,
			items: []ctfv1alpha1.Challenge{testPooled("a", 0, running), testPooled("b", 1)},
			want:  planSummary{Replace: []string{"a", "b"}, ReplaceReason: ReasonReplaced, ReplaceNote: noteNoPool},
		},
		{
			name: "a template without a pool leaves claimed instances to their claimants", tmpl: testTemplate(0, 0),
			items: []ctfv1alpha1.Challenge{testPooled("claimed", 0, running, claimedByTeam)},
			want:  planSummary{Claimed: []string{"claimed"}, ReplaceReason: ReasonReplaced, ReplaceNote: noteNoPool},
		},
		{
			name: "claimed instances are never resized or replaced, nor counted, only checked for their claimant", tmpl: testTemplate(1, 5), target: 1,
			items: []ctfv1alpha1.Challenge{
				testPooled("claimed-stale", 0, running, generation(1), claimedByTeam),
				testPooled("claimed", 1, running, claimedByTeam),
				testPooled("claimed-pending", 2, claimedByTeam),
			},
			want: withSummary(replaced(), func(s *planSummary) {
				s.Claimed = []string{"claimed-stale", "claimed", "claimed-pending"}
				s.Add = 1
				s.Status = status(1, 0, 1)
			}),
		},
		{
			name: "a malformed claimant annotation is no claim: the instance counts, ready", tmpl: testTemplate(1, 5), target: 1,
			items: []ctfv1alpha1.Challenge{testPooled("half", 0, running, func(ch *ctfv1alpha1.Challenge) {
				ch.Annotations[ctfv1alpha1.ClaimantAnnotation] = "team-a/web"
			})},
			want: withSummary(replaced(), func(s *planSummary) { s.Status = status(1, 1, 1) }),
		},
		{
			name: "leaving instances are not counted, deleted again nor checked", tmpl: testTemplate(2, 5), target: 2,
			items: []ctfv1alpha1.Challenge{
				testPooled("leaving", 0, running, leaving),
				testPooled("leaving-stale", 1, generation(1), leaving),
				testPooled("leaving-claimed", 2, running, claimedByTeam, leaving),
				testPooled("a", 3, running),
			},
			want: withSummary(replaced(), func(s *planSummary) { s.Add = 1; s.Status = status(2, 1, 2) }),
		},
		{
			name: "Challenges that are not pooled instances are not the pool's", tmpl: testTemplate(1, 5), target: 1,
			items: []ctfv1alpha1.Challenge{
				testPooled("elsewhere", 0, running, func(ch *ctfv1alpha1.Challenge) { ch.Namespace = "team-a" }),
				testPooled("mislabelled", 1, running, func(ch *ctfv1alpha1.Challenge) { ch.Labels[ctfv1alpha1.PoolLabel] = "other" }),
				testPooled("no-template", 2, running, func(ch *ctfv1alpha1.Challenge) { ch.Spec.Template = "" }),
			},
			want: withSummary(replaced(), func(s *planSummary) { s.Add = 1; s.Status = status(1, 0, 1) }),
		},
		{
			name: "a pool at a target above its min is looked at again in a minute even when nothing changes", tmpl: testTemplate(1, 5), target: 2,
			items: []ctfv1alpha1.Challenge{testPooled("a", 0, running), testPooled("b", 1, running)},
			want:  withSummary(replaced(), func(s *planSummary) { s.Status = status(2, 2, 2); s.RequeueAfter = time.Minute }),
		},
		{
			name: "a pool of min 0 with no demand holds nothing", tmpl: testTemplate(0, 5), target: 0,
			items: []ctfv1alpha1.Challenge{testPooled("a", 0, running)},
			want: withSummary(replaced(), func(s *planSummary) {
				s.Shrink = []string{"a"}
				s.ShrinkReason = ReasonShrunk
				s.Status = status(0, 0, 0)
			}),
		},
	}
	p := &Pools{Namespace: "pool"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := fmt.Sprint(tt.items)
			g.Expect(summarise(p.Plan(tt.tmpl, tt.items, tt.target))).To(Equal(tt.want))
			g.Expect(fmt.Sprint(tt.items)).To(Equal(before), "the listed Challenges (the cache's own objects) are not modified")
		})
	}
}

func withSummary(s planSummary, change func(*planSummary)) planSummary {
	change(&s)
	return s
}

// TestPlanStanding: what a pool's status says while its changes wait: the
// unclaimed instances of the template's generation it holds now and how
// many are ready, beside the target; none without a pool.
func TestPlanStanding(t *testing.T) {
	p := &Pools{Namespace: "pool"}
	for _, tt := range []struct {
		name   string
		tmpl   *ctfv1alpha1.ChallengeTemplate
		items  []ctfv1alpha1.Challenge
		target int32
		want   *ctfv1alpha1.PoolStatus
	}{
		{"empty, to be filled", testTemplate(2, 5), nil, 4, &ctfv1alpha1.PoolStatus{Size: 0, Ready: 0, Target: 4}},
		{"short, to grow", testTemplate(1, 5), []ctfv1alpha1.Challenge{testPooled("a", 0, running), testPooled("b", 1)}, 3,
			&ctfv1alpha1.PoolStatus{Size: 2, Ready: 1, Target: 3}},
		{"a surplus, to shrink", testTemplate(1, 5), []ctfv1alpha1.Challenge{testPooled("a", 0, running), testPooled("b", 1, running)}, 1,
			&ctfv1alpha1.PoolStatus{Size: 2, Ready: 2, Target: 1}},
		{"claimed, leaving and older ones are not held", testTemplate(1, 5), []ctfv1alpha1.Challenge{
			testPooled("a", 0, running), testPooled("claimed", 1, running, claimedByTeam),
			testPooled("leaving", 2, running, leaving), testPooled("old", 3, running, generation(1)),
		}, 2, &ctfv1alpha1.PoolStatus{Size: 1, Ready: 1, Target: 2}},
		{"no pool", testTemplate(0, 0), []ctfv1alpha1.Challenge{testPooled("a", 0, running)}, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(p.Plan(tt.tmpl, tt.items, tt.target).Standing).To(Equal(tt.want))
		})
	}
}

// TestOrphaned: a claimed pooled instance is an orphan when its claimant,
// as read, is gone or is another Challenge under the same name.
func TestOrphaned(t *testing.T) {
	tests := []struct {
		name  string
		found *ctfv1alpha1.Challenge
		want  bool
	}{
		{"the claimant is there", &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{UID: "uid-claimant"}}, false},
		{"the claimant is not found", nil, true},
		{"another Challenge was made under its name", &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{UID: "uid-other"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Orphaned("uid-claimant", tt.found)).To(Equal(tt.want))
		})
	}
}
