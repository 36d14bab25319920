package admission

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/containment"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestQueuePosition: live instances take their places first, the waiting
// ones queue in creation order; leaving and failed instances hold no place;
// the cluster's bound and the template's both hold.
func TestQueuePosition(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	instance := func(i int, tmpl string, installed bool) ctfv1alpha1.Challenge {
		c := builders.FromTemplate("ctf", fmt.Sprintf("c%d", i), fmt.Sprintf("team-%d", i), tmpl,
			builders.UID(fmt.Sprint(i)), builders.Created(at.Add(time.Duration(i)*time.Second)))
		if installed {
			c.Status.StartedAt = &c.CreationTimestamp
		}
		return *c
	}
	web := builders.BareTemplate("web", maxInstances(2))
	all := []ctfv1alpha1.Challenge{instance(0, "web", true), instance(1, "web", true), instance(2, "web", false), instance(3, "web", false), instance(4, "pwn", false)}
	g := NewWithT(t)
	g.Expect(QueuePosition(&all[2], web, all, 0)).To(BeEquivalentTo(1), "the template's two are live")
	g.Expect(QueuePosition(&all[3], web, all, 0)).To(BeEquivalentTo(2))
	g.Expect(QueuePosition(&all[4], nil, all, 0)).To(BeZero(), "another template, no cluster bound")
	g.Expect(QueuePosition(&all[4], nil, all, 4)).To(BeEquivalentTo(1), "the cluster's four: two live, two waiting ahead")
	g.Expect(QueuePosition(&all[4], nil, all, 5)).To(BeZero())

	leaving := append([]ctfv1alpha1.Challenge{}, all...)
	leaving[0].DeletionTimestamp = ptr.To(metav1.NewTime(at))
	g.Expect(QueuePosition(&leaving[2], web, leaving, 0)).To(BeZero(), "one live instance left: the next goes")
	g.Expect(QueuePosition(&leaving[3], web, leaving, 0)).To(BeEquivalentTo(1))

	failed := append([]ctfv1alpha1.Challenge{}, all...)
	failed[2].Status.Phase = ctfv1alpha1.PhaseError
	g.Expect(QueuePosition(&failed[3], web, failed, 0)).To(BeEquivalentTo(1), "a failed install holds no place")

	late := instance(9, "web", false)
	g.Expect(QueuePosition(&late, web, append(all, late), 0)).To(BeEquivalentTo(3), "created last, queued last")
	shared := builders.BareTemplate("bot", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Sharing = ctfv1alpha1.SharingShared })
	bots := []ctfv1alpha1.Challenge{instance(0, "bot", true), instance(1, "bot", false)}
	g.Expect(QueuePosition(&bots[1], shared, bots, 0)).To(BeEquivalentTo(1), "a shared template runs one instance: a second waits")
	g.Expect(describeLimit(shared)).To(ContainSubstring("shared"))
	bots[0].DeletionTimestamp = ptr.To(metav1.NewTime(at))
	g.Expect(QueuePosition(&bots[1], shared, bots, 0)).To(BeZero(), "the first gone, the second goes")
}

// TestCanariesTakeNoTemplatePlace (issue 50, item 11): the operator's
// canaries neither take a place under their template's bound (a shared
// template's one, a per-team one's maxInstances) nor wait for any, as
// Admit queues none; the cluster's bound counts them as any instance.
func TestCanariesTakeNoTemplatePlace(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	canaries := &containment.Canaries{Namespace: "ctf-pool"}
	shared := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web"},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{Sharing: ctfv1alpha1.SharingShared}}
	bounded := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web"},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{MaxInstances: ptr.To[int32](1)}}
	live := func(c *ctfv1alpha1.Challenge, i int) ctfv1alpha1.Challenge {
		c.UID = types.UID(fmt.Sprint("uid-", i))
		c.CreationTimestamp = metav1.NewTime(at.Add(time.Duration(i) * time.Second))
		c.Status.StartedAt = &c.CreationTimestamp
		return *c
	}
	waiting := func(c *ctfv1alpha1.Challenge, i int) ctfv1alpha1.Challenge {
		w := live(c, i)
		w.Status.StartedAt = nil
		return w
	}
	solver := canaries.NewSolver(shared)
	trial := canaries.New(shared)
	organisers := builders.FromTemplate("ctf", "web", "organisers", "web")
	// A Challenge of the platform's dressed as a canary, outside the canary
	// namespace: a team's like any.
	forged := canaries.NewSolver(shared)
	forged.Namespace = "ctf"
	for _, tt := range []struct {
		name    string
		tmpl    *ctfv1alpha1.ChallengeTemplate
		max     int32
		c       ctfv1alpha1.Challenge
		others  []ctfv1alpha1.Challenge
		wantPos int32
	}{
		{"the organiser's shared instance after the solver canary", shared, 0, waiting(organisers, 2), []ctfv1alpha1.Challenge{live(solver, 1)}, 0},
		{"the solver canary after the organiser's shared instance", shared, 0, waiting(solver, 2), []ctfv1alpha1.Challenge{live(organisers, 1)}, 0},
		{"a containment canary after the organiser's shared instance", shared, 0, waiting(trial, 2), []ctfv1alpha1.Challenge{live(organisers, 1)}, 0},
		{"a team under maxInstances beside both canaries", bounded, 0, waiting(organisers, 3), []ctfv1alpha1.Challenge{live(solver, 1), live(trial, 2)}, 0},
		{"a second team under maxInstances", bounded, 0, waiting(organisers, 3), []ctfv1alpha1.Challenge{live(solver, 1), live(forged, 2)}, 1},
		{"a canary waits for no bound", shared, 1, waiting(solver, 2), []ctfv1alpha1.Challenge{live(organisers, 1)}, 0},
		{"a team under the cluster's bound, the canary live", shared, 1, waiting(organisers, 2), []ctfv1alpha1.Challenge{live(solver, 1)}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			q := &Queue{Reader: listed{items: append(tt.others, tt.c)}, MaxInstances: tt.max, Canaries: canaries}
			g.Expect(q.Position(context.Background(), &tt.c, tt.tmpl)).To(Equal(tt.wantPos))
		})
	}
}
