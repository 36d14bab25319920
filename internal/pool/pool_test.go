package pool

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// testClaimant is a new Challenge of "web" in team-a's namespace, as a
// platform creates it, changed by each option.
func testClaimant(options ...func(*ctfv1alpha1.Challenge)) *ctfv1alpha1.Challenge {
	return builders.FromTemplate("team-a", "web", "team-a", "web", append([]builders.ChallengeEdit{builders.UID("uid-claimant")}, options...)...)
}

// TestMayClaim: only a Challenge of a pooled template that asks for it as
// it is, and has not been installed, claims.
func TestMayClaim(t *testing.T) {
	started := metav1.NewTime(epoch)
	phase := func(p ctfv1alpha1.Phase) func(*ctfv1alpha1.Challenge) {
		return func(c *ctfv1alpha1.Challenge) { c.Status.Phase = p }
	}
	tests := []struct {
		name  string
		pools *Pools
		tmpl  *ctfv1alpha1.ChallengeTemplate
		c     *ctfv1alpha1.Challenge
		want  bool
	}{
		{"a new Challenge of a pooled template", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(), true},
		{"no pools (nil)", nil, testTemplate(1, 5), testClaimant(), false},
		{"no pool namespace", &Pools{}, testTemplate(1, 5), testClaimant(), false},
		{"no template", &Pools{Namespace: "pool"}, nil, testClaimant(), false},
		{"a template without a pool", &Pools{Namespace: "pool"}, testTemplate(0, 0), testClaimant(), false},
		{"a pooled instance itself", &Pools{Namespace: "pool"}, testTemplate(1, 5), func() *ctfv1alpha1.Challenge {
			ch := testPooled("pooled", 0)
			return &ch
		}(), false},
		{"one started (installed itself)", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(func(c *ctfv1alpha1.Challenge) { c.Status.StartedAt = &started }), false},
		{"one that overrides a value", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(func(c *ctfv1alpha1.Challenge) { c.Spec.Values = &ctfv1alpha1.Values{} }), false},
		{"one asking its own image", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(func(c *ctfv1alpha1.Challenge) { c.Spec.Image = "registry.example/x:1" }), false},
		{"phase None", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(phase(ctfv1alpha1.PhaseNone)), true},
		{"phase Queued", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(phase(ctfv1alpha1.PhaseQueued)), true},
		{"phase Pending", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(phase(ctfv1alpha1.PhasePending)), false},
		{"phase Running", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(phase(ctfv1alpha1.PhaseRunning)), false},
		{"phase Error (refused)", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(phase(ctfv1alpha1.PhaseError)), false},
		{"phase Deleted", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(phase(ctfv1alpha1.PhaseDeleted)), false},
		{"its own lifetime is its own affair", &Pools{Namespace: "pool"}, testTemplate(1, 5), testClaimant(func(c *ctfv1alpha1.Challenge) {
			c.Spec.Lifetime = &metav1.Duration{Duration: time.Minute}
		}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.pools.mayClaim(tt.c, tt.tmpl)).To(Equal(tt.want))
		})
	}
}

// TestCandidates: a claimant tries the claimable instances nobody here took
// lately, oldest first (by name on a tie), starting at one its UID picks.
func TestCandidates(t *testing.T) {
	pool := func() []ctfv1alpha1.Challenge {
		return []ctfv1alpha1.Challenge{
			testPooled("c", 2, running),
			testPooled("a", 0, running),
			testPooled("b", 1, running),
		}
	}
	none := func(apitypes.NamespacedName) bool { return false }
	tests := []struct {
		name     string
		items    []ctfv1alpha1.Challenge
		claimant apitypes.UID
		taken    func(apitypes.NamespacedName) bool
		want     []string
	}{
		// crc32 of the UID modulo the candidates' count picks the start:
		// uid-4 gives 0 of 3, uid-1 1 of 3 and 0 of 2, uid-7 2 of 3.
		{"an empty pool", nil, "uid-4", none, nil},
		{"oldest first from the start its UID picks (0)", pool(), "uid-4", none, []string{"a", "b", "c"}},
		{"rotated to the second (1)", pool(), "uid-1", none, []string{"b", "c", "a"}},
		{"rotated to the third (2)", pool(), "uid-7", none, []string{"c", "a", "b"}},
		{"taken lately by this process: skipped", pool(), "uid-1", func(k apitypes.NamespacedName) bool {
			return k == apitypes.NamespacedName{Namespace: "pool", Name: "a"}
		}, []string{"b", "c"}},
		{"a tie in creation time goes by name", []ctfv1alpha1.Challenge{testPooled("y", 0, running), testPooled("x", 0, running)}, "uid-1", none, []string{"x", "y"}},
		{"not claimable: pending, claimed, leaving or stale", []ctfv1alpha1.Challenge{
			testPooled("pending", 0),
			testPooled("claimed", 1, running, claimedByTeam),
			testPooled("leaving", 2, running, leaving),
			testPooled("stale", 3, running, generation(1)),
			testPooled("ready", 4, running),
		}, "uid-7", none, []string{"ready"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, ch := range candidates(tt.items, testTemplate(1, 5), tt.claimant, tt.taken) {
				got = append(got, ch.Name)
			}
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

// TestPlain: a Challenge that sets any of what a template sets is installed
// as it asks, not claimed.
func TestPlain(t *testing.T) {
	tests := []struct {
		name   string
		change func(*ctfv1alpha1.ChallengeSpec)
		want   bool
	}{
		{"template, participant and nothing else", func(*ctfv1alpha1.ChallengeSpec) {}, true},
		{"its own lifetime", func(s *ctfv1alpha1.ChallengeSpec) { s.Lifetime = &metav1.Duration{Duration: time.Hour} }, true},
		{"an image", func(s *ctfv1alpha1.ChallengeSpec) { s.Image = "registry.example/x:1" }, false},
		{"ports", func(s *ctfv1alpha1.ChallengeSpec) { s.Ports = []ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1337}} }, false},
		{"an empty list of ports still asks", func(s *ctfv1alpha1.ChallengeSpec) { s.Ports = []ctfv1alpha1.ChallengePort{} }, false},
		{"env", func(s *ctfv1alpha1.ChallengeSpec) { s.Env = []ctfv1alpha1.EnvVar{{Name: "A"}} }, false},
		{"resources", func(s *ctfv1alpha1.ChallengeSpec) { s.Resources = &ctfv1alpha1.Resources{} }, false},
		{"exposure", func(s *ctfv1alpha1.ChallengeSpec) { s.Expose = &ctfv1alpha1.Expose{} }, false},
		{"values", func(s *ctfv1alpha1.ChallengeSpec) { s.Values = &ctfv1alpha1.Values{} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testClaimant()
			tt.change(&c.Spec)
			NewWithT(t).Expect(plain(c)).To(Equal(tt.want))
		})
	}
}

// TestClaimable: Running, unclaimed, not leaving, for the current
// generation; the ClaimableField index holds exactly those (the claim lists
// no other), under the template and generation it was made for.
func TestClaimable(t *testing.T) {
	tests := []struct {
		name   string
		pooled ctfv1alpha1.Challenge
		want   bool
	}{
		{"running and current", testPooled("a", 0, running), true},
		{"pending", testPooled("a", 0), false},
		{"claimed", testPooled("a", 0, running, claimedByTeam), false},
		{"leaving", testPooled("a", 0, running, leaving), false},
		{"made for an older generation", testPooled("a", 0, running, generation(1)), false},
		{"without a generation", testPooled("a", 0, running, func(ch *ctfv1alpha1.Challenge) {
			delete(ch.Annotations, ctfv1alpha1.TemplateGenerationAnnotation)
		}), false},
		{"an incomplete claimant annotation is no claim", testPooled("a", 0, running, func(ch *ctfv1alpha1.Challenge) {
			ch.Annotations[ctfv1alpha1.ClaimantAnnotation] = "team-a/web/"
		}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := testTemplate(1, 5)
			g.Expect(Claimable(&tt.pooled, tmpl)).To(Equal(tt.want))
			indexed := slices.Contains(IndexClaimable(&tt.pooled), claimableKey(tmpl))
			g.Expect(indexed).To(Equal(tt.want), "indexed as claimable")
		})
	}
	other := testPooled("a", 0, running, func(ch *ctfv1alpha1.Challenge) { ch.Labels[ctfv1alpha1.PoolLabel] = "other" })
	NewWithT(t).Expect(IndexClaimable(&other)).To(BeEmpty(), "labelled with another template than its own")
}

// TestClaimant: the claimant annotation is "<namespace>/<name>/<uid>", each
// part present, or no claim; IndexClaimant indexes "<namespace>/<name>".
func TestClaimant(t *testing.T) {
	tests := []struct {
		annotation string
		wantKey    apitypes.NamespacedName
		wantUID    apitypes.UID
		wantOK     bool
	}{
		{"team-a/web/uid-1", apitypes.NamespacedName{Namespace: "team-a", Name: "web"}, "uid-1", true},
		{"", apitypes.NamespacedName{}, "", false},
		{"team-a/web", apitypes.NamespacedName{}, "", false},
		{"team-a/web/uid-1/more", apitypes.NamespacedName{}, "", false},
		{"/web/uid-1", apitypes.NamespacedName{}, "", false},
		{"team-a//uid-1", apitypes.NamespacedName{}, "", false},
		{"team-a/web/", apitypes.NamespacedName{}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.annotation, func(t *testing.T) {
			g := NewWithT(t)
			pooled := testPooled("a", 0, func(ch *ctfv1alpha1.Challenge) {
				ch.Annotations[ctfv1alpha1.ClaimantAnnotation] = tt.annotation
			})
			key, uid, ok := Claimant(&pooled)
			g.Expect([]any{key, uid, ok}).To(Equal([]any{tt.wantKey, tt.wantUID, tt.wantOK}))
			if tt.wantOK {
				g.Expect(IndexClaimant(&pooled)).To(Equal([]string{tt.wantKey.String()}))
			} else {
				g.Expect(IndexClaimant(&pooled)).To(BeEmpty())
			}
		})
	}
	pooled := testPooled("a", 0)
	delete(pooled.Annotations, ctfv1alpha1.ClaimantAnnotation)
	_, _, ok := Claimant(&pooled)
	NewWithT(t).Expect(ok).To(BeFalse(), "no annotation")
}

// TestIsPooled: a pooled instance is in the pool namespace, labelled with
// its own template.
func TestIsPooled(t *testing.T) {
	tests := []struct {
		name  string
		pools *Pools
		ch    ctfv1alpha1.Challenge
		want  bool
	}{
		{"in the pool namespace, labelled with its template", &Pools{Namespace: "pool"}, testPooled("a", 0), true},
		{"no pools", nil, testPooled("a", 0), false},
		{"no pool namespace", &Pools{}, testPooled("a", 0), false},
		{"in another namespace", &Pools{Namespace: "pool"}, testPooled("a", 0, func(ch *ctfv1alpha1.Challenge) { ch.Namespace = "team-a" }), false},
		{"labelled with another template", &Pools{Namespace: "pool"}, testPooled("a", 0, func(ch *ctfv1alpha1.Challenge) { ch.Labels[ctfv1alpha1.PoolLabel] = "other" }), false},
		{"not labelled", &Pools{Namespace: "pool"}, testPooled("a", 0, func(ch *ctfv1alpha1.Challenge) { ch.Labels = nil }), false},
		{"without a template (label and template both empty)", &Pools{Namespace: "pool"}, testPooled("a", 0, func(ch *ctfv1alpha1.Challenge) {
			ch.Spec.Template = ""
			ch.Labels[ctfv1alpha1.PoolLabel] = ""
		}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.pools.IsPooled(&tt.ch)).To(Equal(tt.want))
		})
	}
}

// TestClaimedBy: the claimant's participant, for a claimed pooled instance only.
func TestClaimedBy(t *testing.T) {
	withParticipant := func(ch *ctfv1alpha1.Challenge) {
		ch.Annotations[ctfv1alpha1.ClaimantParticipantAnnotation] = "team-a"
	}
	tests := []struct {
		name string
		ch   ctfv1alpha1.Challenge
		want string
	}{
		{"claimed", testPooled("a", 0, claimedByTeam, withParticipant), "team-a"},
		{"unclaimed (a participant annotation alone is no claim)", testPooled("a", 0, withParticipant), ""},
		{"claimed but not pooled", testPooled("a", 0, claimedByTeam, withParticipant, func(ch *ctfv1alpha1.Challenge) { ch.Namespace = "team-a" }), ""},
		{"claimed without a participant annotation", testPooled("a", 0, claimedByTeam), ""},
	}
	p := &Pools{Namespace: "pool"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(p.ClaimedBy(&tt.ch)).To(Equal(tt.want))
		})
	}
}

// TestClaim: a claim names its claimant (namespace, name, UID) and its
// participant, labels the instance claimed and drops the template's
// ownership; the rest of the instance is left as it was.
func TestClaim(t *testing.T) {
	g := NewWithT(t)
	tmpl := testTemplate(1, 5)
	pooled := testPooled("web-pool-bcdfg", 0, running, func(ch *ctfv1alpha1.Challenge) {
		ch.OwnerReferences = []metav1.OwnerReference{{Kind: "ChallengeTemplate", Name: "web", UID: "uid-web"}}
	})
	want := pooled.DeepCopy()
	MarkClaimed(&pooled, testClaimant())

	want.Annotations[ctfv1alpha1.ClaimantAnnotation] = "team-a/web/uid-claimant"
	want.Annotations[ctfv1alpha1.ClaimantParticipantAnnotation] = "team-a"
	want.Labels[ctfv1alpha1.ClaimedLabel] = "true"
	want.OwnerReferences = nil
	g.Expect(&pooled).To(Equal(want))
	g.Expect(Claimable(&pooled, tmpl)).To(BeFalse(), "claimed once, never again")
	g.Expect(claimedBy(&pooled, testClaimant())).To(BeTrue())
	g.Expect(claimedBy(&pooled, testClaimant(func(c *ctfv1alpha1.Challenge) { c.UID = "uid-other" }))).To(BeFalse(), "another Challenge under the claimant's name")
	g.Expect((&Pools{Namespace: "pool"}).ClaimedBy(&pooled)).To(Equal("team-a"))

	bare := testPooled("bare", 0, running)
	bare.Annotations = nil
	MarkClaimed(&bare, testClaimant())
	g.Expect(bare.Annotations).To(HaveKeyWithValue(ctfv1alpha1.ClaimantAnnotation, "team-a/web/uid-claimant"), "an instance without annotations gets them")
}

// TestNew: a new pooled instance is the template's, in the pool namespace,
// made for its current generation, its own participant, and owned by the
// template until claimed; a pool of them is claimable once Running.
func TestNew(t *testing.T) {
	g := NewWithT(t)
	tmpl := testTemplate(1, 5)
	tmpl.UID = "uid-web"
	ch := New(tmpl, "pool")
	g.Expect(ch.Namespace).To(Equal("pool"))
	g.Expect(ch.Name).To(MatchRegexp(`^web-pool-[b-z2-9]{5}$`))
	g.Expect(ch.Spec).To(Equal(ctfv1alpha1.ChallengeSpec{Template: "web", Participant: ch.Name}))
	g.Expect(ch.OwnerReferences).To(ConsistOf(HaveField("UID", apitypes.UID("uid-web"))))
	g.Expect(*ch.OwnerReferences[0].Controller).To(BeTrue())
	g.Expect((&Pools{Namespace: "pool"}).IsPooled(ch)).To(BeTrue())
	g.Expect(Claimable(ch, tmpl)).To(BeFalse(), "not Running yet")
	ch.Status.Phase = ctfv1alpha1.PhaseRunning
	g.Expect(Claimable(ch, tmpl)).To(BeTrue())
	tmpl.Generation++
	g.Expect(Claimable(ch, tmpl)).To(BeFalse(), "made for the generation before")
}
