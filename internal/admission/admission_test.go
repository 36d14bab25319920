package admission

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/pool"
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
		c := ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ctf", UID: types.UID(name), CreationTimestamp: at},
			Spec: ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: template}}
		if installed {
			c.Status.StartedAt = &at
		}
		return c
	}
	running := challenge("a", "web", true)
	web := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{MaxInstances: ptr.To[int32](1)}}
	pwn := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "pwn"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{MaxInstances: ptr.To[int32](1)}}
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
