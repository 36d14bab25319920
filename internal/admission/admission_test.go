package admission

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// listed answers every List with the same Challenges, as the cache's index
// would for one participant.
type listed struct {
	client.Reader
	items []ctfv1alpha1.Challenge
}

func (l listed) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	list.(*ctfv1alpha1.ChallengeList).Items = append([]ctfv1alpha1.Challenge(nil), l.items...)
	return nil
}

// TestAdmitAppliesTheRulesInOrder: an installed instance is admitted
// whatever the bounds say now; the quota and the budget are decided before
// the queue, so a team over either is refused, never queued.
func TestAdmitAppliesTheRulesInOrder(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	challenge := func(name, template string, installed bool) ctfv1alpha1.Challenge {
		c := builders.FromTemplate("ctf", name, "team-1", template, builders.UID(name), builders.Created(at.Time))
		if installed {
			c.Status.StartedAt = &at
		}
		return *c
	}
	running := challenge("a", "web", true)
	web := builders.BareTemplate("web", maxInstances(1))
	pwn := builders.BareTemplate("pwn", maxInstances(1))
	pooled := challenge("web-pool-abcde", "web", false)
	pooled.Labels = map[string]string{ctfv1alpha1.PoolLabel: "web"}
	reader := listed{items: []ctfv1alpha1.Challenge{running}}
	full := Admission{Quota: &Quota{Reader: reader, DefaultMax: 1}, Queue: &Queue{Reader: reader, MaxInstances: 1}}
	tests := []struct {
		name      string
		admission Admission
		c         ctfv1alpha1.Challenge
		tmpl      *ctfv1alpha1.ChallengeTemplate
		want      string
	}{
		{"installed: admitted over every bound", full, challenge("b", "web", true), web, ""},
		{"over the quota: refused, not queued", full, challenge("b", "pwn", false), pwn, lifecycle.ReasonQuotaExceeded},
		{"within the quota, template full: queued", Admission{Queue: &Queue{Reader: reader}}, challenge("b", "web", false), web, lifecycle.ReasonQueued},
		{"over the team's budget: refused, not queued", Admission{Budget: &Budget{Reader: reader, CPU: resource.MustParse("150m"), Cost: tenth}, Queue: &Queue{Reader: reader}},
			challenge("b", "web", false), web, lifecycle.ReasonBudgetExceeded},
		{"within the budget, template full: queued", Admission{Budget: &Budget{Reader: reader, CPU: resource.MustParse("200m"), Cost: tenth}, Queue: &Queue{Reader: reader}},
			challenge("b", "web", false), web, lifecycle.ReasonQueued},
		{"no bounds: admitted", Admission{}, challenge("b", "web", false), web, ""},
		{"a pooled instance is no team's: no budget", Admission{Budget: &Budget{Reader: reader, CPU: resource.MustParse("1m"), Cost: tenth}, Pools: &pool.Pools{Namespace: "ctf"}},
			pooled, web, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.admission.Admit(context.Background(), &tt.c, tt.tmpl)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, tt.want)).To(BeTrue(), "got %v", err)
		})
	}
}

// TestPoolsStayWithinTheClusterBound: --max-instances bounds pooled
// instances too (an organiser's pool.max once put 6 Running under a bound
// of 4): a pool fills only as far as the cluster's bound, behind every
// team's start; a claimed instance and the Challenge it serves count once;
// a template's maxInstances, its teams' bound, holds back no pool.
func TestPoolsStayWithinTheClusterBound(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	challenge := func(name, participant string, minute int, installed bool) ctfv1alpha1.Challenge {
		c := builders.FromTemplate("ctf", name, participant, "web", builders.UID(name), builders.Created(at.Add(time.Duration(minute)*time.Minute)))
		if installed {
			c.Status.StartedAt = &at
		}
		return *c
	}
	pooledOne := func(name string, minute int, installed bool) ctfv1alpha1.Challenge {
		c := challenge(name, name, minute, installed)
		c.Namespace = "ctf-pool"
		c.Labels = map[string]string{ctfv1alpha1.PoolLabel: "web"}
		return c
	}
	web := builders.BareTemplate("web")
	capped := builders.BareTemplate("web", maxInstances(1))
	pools := &pool.Pools{Namespace: "ctf-pool"}
	fullPool := []ctfv1alpha1.Challenge{pooledOne("p1", 0, true), pooledOne("p2", 0, true), pooledOne("p3", 0, true), pooledOne("p4", 0, true)}
	claimed := pooledOne("p1", 0, true)
	claimant := challenge("team-1-web", "team-1", 1, false)
	claimant.Status.PooledInstance = &ctfv1alpha1.PooledInstanceRef{Namespace: "ctf-pool", Name: "p1"}
	tests := []struct {
		name  string
		items []ctfv1alpha1.Challenge
		max   int32
		c     ctfv1alpha1.Challenge
		tmpl  *ctfv1alpha1.ChallengeTemplate // web when nil
		want  string
	}{
		{"a pool at the cluster's bound: the next pooled instance waits", fullPool, 4, pooledOne("p5", 1, false), nil, lifecycle.ReasonQueued},
		{"a pool at the cluster's bound: a team's install waits too", fullPool, 4, challenge("b", "team-2", 1, false), nil, lifecycle.ReasonQueued},
		{"under the cluster's bound: the pool fills", fullPool[:3], 4, pooledOne("p4", 1, false), nil, ""},
		{"a claimed instance and its claimant count once", []ctfv1alpha1.Challenge{claimed, claimant}, 2, challenge("b", "team-2", 2, false), nil, ""},
		{"a team's start goes ahead of a pool's refill created before it", []ctfv1alpha1.Challenge{pooledOne("p1", 0, false)}, 1, challenge("b", "team-2", 1, false), nil, ""},
		{"a pool's refill waits behind a team's start created after it", []ctfv1alpha1.Challenge{challenge("b", "team-2", 1, false)}, 1, pooledOne("p1", 0, false), nil, lifecycle.ReasonQueued},
		{"a template's bound holds no pool", []ctfv1alpha1.Challenge{challenge("a", "team-2", 0, true)}, 0, pooledOne("p1", 1, false), capped, ""},
		{"a template's bound holds its teams", []ctfv1alpha1.Challenge{challenge("a", "team-2", 0, true)}, 0, challenge("b", "team-3", 1, false), capped, lifecycle.ReasonQueued},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			reader := listed{items: append(tt.items, tt.c)}
			a := Admission{Pools: pools, Queue: &Queue{Reader: reader, MaxInstances: tt.max, Pools: pools}}
			tmpl := tt.tmpl
			if tmpl == nil {
				tmpl = web
			}
			err := a.Admit(context.Background(), &tt.c, tmpl)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, tt.want)).To(BeTrue(), "got %v", err)
		})
	}
}
