package challenge

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestExpiryMoved: the expiry controller sees a Challenge when it is
// created (or first seen) and when its expiresAt is set, moved or removed;
// no other change, and no deletion, reaches it.
func TestExpiryMoved(t *testing.T) {
	at := func(d time.Duration) *metav1.Time {
		return &metav1.Time{Time: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC).Add(d)}
	}
	with := func(expires *metav1.Time, mutate ...func(*ctfv1alpha1.Challenge)) *ctfv1alpha1.Challenge {
		ch := &ctfv1alpha1.Challenge{Status: ctfv1alpha1.ChallengeStatus{ExpiresAt: expires, Phase: ctfv1alpha1.PhaseRunning}}
		for _, m := range mutate {
			m(ch)
		}
		return ch
	}
	p := expiryMoved()
	tests := []struct {
		name         string
		old, updated *ctfv1alpha1.Challenge
		want         bool
	}{
		{"expiresAt set", with(nil), with(at(0)), true},
		{"expiresAt moved by a renewal", with(at(0)), with(at(time.Hour)), true},
		{"expiresAt removed", with(at(0)), with(nil), true},
		{"another status change", with(at(0)), with(at(0), func(ch *ctfv1alpha1.Challenge) { ch.Status.Phase = ctfv1alpha1.PhaseError }), false},
		{"a label", with(at(0)), with(at(0), func(ch *ctfv1alpha1.Challenge) { ch.Labels = map[string]string{"a": "b"} }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.updated})).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	g.Expect(p.Create(event.CreateEvent{Object: with(at(0))})).To(BeTrue(), "a Challenge seen, at start too, has its timer set")
	g.Expect(p.Delete(event.DeleteEvent{Object: with(at(0))})).To(BeFalse())
}
