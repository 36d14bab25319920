package admission

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestCheckQuota: one instance per template and participant, at most the
// cap overall, decided in creation order.
func TestCheckQuota(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	ch := func(name, template string, created metav1.Time, installed bool) ctfv1alpha1.Challenge {
		c := builders.FromTemplate("ctf", name, "team-1", template, builders.UID(name), builders.Created(created.Time))
		if installed {
			c.Status.StartedAt = &created
		}
		return *c
	}
	later := metav1.NewTime(t0.Add(time.Second))
	tests := []struct {
		name   string
		c      ctfv1alpha1.Challenge
		others []ctfv1alpha1.Challenge
		max    int32
		want   string
	}{
		{"alone", ch("a", "web", t0, false), nil, 1, ""},
		{"duplicate of an older instance", ch("b", "web", later, false), []ctfv1alpha1.Challenge{ch("a", "web", t0, false)}, 0, "already has an instance of web"},
		{"the older of two is admitted", ch("a", "web", t0, false), []ctfv1alpha1.Challenge{ch("b", "web", later, false)}, 0, ""},
		{"same second: an installed one wins", ch("a", "web", t0, false), []ctfv1alpha1.Challenge{ch("b", "web", t0, true)}, 0, "already has an instance"},
		{"same second, none installed: by name", ch("b", "web", t0, false), []ctfv1alpha1.Challenge{ch("a", "web", t0, false)}, 0, "already has an instance"},
		{"over the cap", ch("b", "pwn", later, false), []ctfv1alpha1.Challenge{ch("a", "web", t0, true)}, 1, "the limit is 1"},
		{"under the cap", ch("b", "pwn", later, false), []ctfv1alpha1.Challenge{ch("a", "web", t0, true)}, 2, ""},
		{"installed, as listed, though its own copy was read before", ch("b", "pwn", later, false),
			[]ctfv1alpha1.Challenge{ch("a", "web", t0, false), ch("b", "pwn", later, true)}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckQuota(&tt.c, nil, tt.others, tt.max)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonQuotaExceeded)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
	g := NewWithT(t)
	capped := builders.BareTemplate("pwn", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.MaxInstancesPerParticipant = ptr.To[int32](3) })
	c := ch("d", "pwn", later, false)
	g.Expect(CheckQuota(&c, capped, []ctfv1alpha1.Challenge{ch("a", "x", t0, true), ch("b", "y", t0, true)}, 1)).To(Succeed(), "the template's limit wins over the default")
}
