package challengetemplate

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestAChangedStaticFlagIsHeldWhileServed: a flag's earlier value is held
// while a running instance may serve it (its Secret holds it, or a
// container started before the Secret last changed), counted, and dropped
// when none does; a value current again is not held; at most
// maxPreviousStaticFlags are, the newest.
func TestAChangedStaticFlagIsHeldWhileServed(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	flag := func(digest string, previous ...ctfv1alpha1.PreviousStaticFlag) ctfv1alpha1.StaticFlagDigest {
		return ctfv1alpha1.StaticFlagDigest{Name: "main", Digest: digest, Previous: previous}
	}
	prev := func(digest string, at metav1.Time, n int32) ctfv1alpha1.PreviousStaticFlag {
		return ctfv1alpha1.PreviousStaticFlag{Digest: digest, RetiredAt: at, Instances: n}
	}
	holding := func(digest string) ServedFlags {
		return ServedFlags{Instance: "ctf/" + digest, Digests: map[string]string{"main": digest}}
	}
	tests := []struct {
		name    string
		old     []ctfv1alpha1.StaticFlagDigest
		current []ctfv1alpha1.StaticFlagDigest
		served  []ServedFlags
		want    []ctfv1alpha1.StaticFlagDigest
		changes []FlagChange
	}{{
		name: "unchanged, nothing held", old: []ctfv1alpha1.StaticFlagDigest{flag("a")}, current: []ctfv1alpha1.StaticFlagDigest{flag("a")},
		served: []ServedFlags{holding("a")}, want: []ctfv1alpha1.StaticFlagDigest{flag("a")},
	}, {
		name: "changed while an instance's Secret holds it", old: []ctfv1alpha1.StaticFlagDigest{flag("a")}, current: []ctfv1alpha1.StaticFlagDigest{flag("b")},
		served: []ServedFlags{holding("a"), holding("a"), holding("b")},
		want:   []ctfv1alpha1.StaticFlagDigest{flag("b", prev("a", now, 2))}, changes: []FlagChange{{Flag: "main", Retired: ptr.To[int32](2)}},
	}, {
		name: "changed, a container started before its Secret changed", old: []ctfv1alpha1.StaticFlagDigest{flag("a")}, current: []ctfv1alpha1.StaticFlagDigest{flag("b")},
		served: []ServedFlags{{Instance: "ctf/x", Digests: map[string]string{"main": "b"}, StartedBeforeChange: true}},
		want:   []ctfv1alpha1.StaticFlagDigest{flag("b", prev("a", now, 1))}, changes: []FlagChange{{Flag: "main", Retired: ptr.To[int32](1)}},
	}, {
		name: "changed, nothing serves it", old: []ctfv1alpha1.StaticFlagDigest{flag("a")}, current: []ctfv1alpha1.StaticFlagDigest{flag("b")},
		served: []ServedFlags{holding("b")},
		want:   []ctfv1alpha1.StaticFlagDigest{flag("b")}, changes: []FlagChange{{Flag: "main", Retired: ptr.To[int32](0)}},
	}, {
		name: "the last instance that served it is gone", old: []ctfv1alpha1.StaticFlagDigest{flag("b", prev("a", earlier, 1))}, current: []ctfv1alpha1.StaticFlagDigest{flag("b")},
		served: []ServedFlags{holding("b")},
		want:   []ctfv1alpha1.StaticFlagDigest{flag("b")}, changes: []FlagChange{{Flag: "main", Dropped: 1}},
	}, {
		name: "still served by fewer", old: []ctfv1alpha1.StaticFlagDigest{flag("b", prev("a", earlier, 2))}, current: []ctfv1alpha1.StaticFlagDigest{flag("b")},
		served: []ServedFlags{holding("a")},
		want:   []ctfv1alpha1.StaticFlagDigest{flag("b", prev("a", earlier, 1))},
	}, {
		name: "changed back: the current value is not held", old: []ctfv1alpha1.StaticFlagDigest{flag("b", prev("a", earlier, 1))}, current: []ctfv1alpha1.StaticFlagDigest{flag("a")},
		served: []ServedFlags{holding("a"), holding("b")},
		want:   []ctfv1alpha1.StaticFlagDigest{flag("a", prev("b", now, 1))}, changes: []FlagChange{{Flag: "main", Retired: ptr.To[int32](1)}},
	}, {
		name: "changed again: both held", old: []ctfv1alpha1.StaticFlagDigest{flag("b", prev("a", earlier, 1))}, current: []ctfv1alpha1.StaticFlagDigest{flag("c")},
		served: []ServedFlags{holding("a"), holding("b")},
		want:   []ctfv1alpha1.StaticFlagDigest{flag("c", prev("a", earlier, 1), prev("b", now, 1))}, changes: []FlagChange{{Flag: "main", Retired: ptr.To[int32](1)}},
	}, {
		name: "too many: the oldest goes", old: []ctfv1alpha1.StaticFlagDigest{flag("e", prev("a", earlier, 1), prev("b", earlier, 1), prev("c", earlier, 1), prev("d", earlier, 1))},
		current: []ctfv1alpha1.StaticFlagDigest{flag("f")},
		served:  []ServedFlags{{Instance: "ctf/old", StartedBeforeChange: true}},
		want:    []ctfv1alpha1.StaticFlagDigest{flag("f", prev("b", earlier, 1), prev("c", earlier, 1), prev("d", earlier, 1), prev("e", now, 1))},
		changes: []FlagChange{{Flag: "main", Retired: ptr.To[int32](1), Evicted: 1}},
	}, {
		name: "a flag no longer published holds nothing", old: []ctfv1alpha1.StaticFlagDigest{flag("b", prev("a", earlier, 1))},
		served: []ServedFlags{holding("a")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, changes := HoldServed(tt.old, retire(tt.old, tt.current, now), tt.served)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(changes).To(Equal(tt.changes))
		})
	}
}

// TestStartedBeforeChange: a container may serve an earlier value of its
// Secret only if it started no later than the Secret's last write, which
// came after its creation.
func TestStartedBeforeChange(t *testing.T) {
	created := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	written := created.Add(10 * time.Minute)
	tests := []struct {
		name             string
		started          []time.Time
		created, written time.Time
		want             bool
	}{
		{"never written since created", []time.Time{created}, created, created, false},
		{"no managedFields", []time.Time{created}, created, time.Time{}, false},
		{"started before the write", []time.Time{written.Add(time.Minute), written.Add(-time.Minute)}, created, written, true},
		{"started in the second of the write", []time.Time{written}, created, written, true},
		{"every container started after", []time.Time{written.Add(time.Second)}, created, written, false},
		{"nothing runs", nil, created, written, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(StartedBeforeChange(tt.started, tt.created, tt.written)).To(Equal(tt.want))
		})
	}
}
