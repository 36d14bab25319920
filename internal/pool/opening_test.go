package pool

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestOpeningAt: the window is [time-fillBefore, time+holdFor), with the
// CRD's defaults when unset; Next wakes the pool at each edge.
func TestOpeningAt(t *testing.T) {
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	hour := &metav1.Duration{Duration: time.Hour}
	spec := func(fill, hold *metav1.Duration) *ctfv1alpha1.PoolSpec {
		return &ctfv1alpha1.PoolSpec{Max: 2, Opening: &ctfv1alpha1.PoolOpening{Time: metav1.NewTime(at), Size: 50, FillBefore: fill, HoldFor: hold}}
	}
	tests := []struct {
		name string
		spec *ctfv1alpha1.PoolSpec
		now  time.Time
		want Opening
	}{
		{"no pool", nil, at, Opening{}},
		{"no opening", &ctfv1alpha1.PoolSpec{Max: 2}, at, Opening{}},
		{"a day before: wake at the window's start", spec(hour, hour), at.Add(-24 * time.Hour),
			Opening{At: at, Next: 23 * time.Hour}},
		{"a second before the window", spec(hour, hour), at.Add(-time.Hour - time.Second),
			Opening{At: at, Next: time.Second}},
		{"the window's start is in it", spec(hour, hour), at.Add(-time.Hour),
			Opening{At: at, Open: true, Size: 50, Next: 2 * time.Hour}},
		{"the opening itself", spec(hour, hour), at, Opening{At: at, Open: true, Size: 50, Next: time.Hour}},
		{"the last moment of the hold", spec(hour, hour), at.Add(time.Hour - time.Nanosecond),
			Opening{At: at, Open: true, Size: 50, Next: time.Nanosecond}},
		{"the window's end is out of it: nothing left to wake for", spec(hour, hour), at.Add(time.Hour), Opening{At: at}},
		{"long after", spec(hour, hour), at.Add(48 * time.Hour), Opening{At: at}},
		{"default fillBefore 15m: 16m before is outside", spec(nil, nil), at.Add(-16 * time.Minute),
			Opening{At: at, Next: time.Minute}},
		{"default fillBefore 15m: 15m before is inside", spec(nil, nil), at.Add(-15 * time.Minute),
			Opening{At: at, Open: true, Size: 50, Next: 45 * time.Minute}},
		{"default holdFor 30m: 29m after is inside", spec(nil, nil), at.Add(29 * time.Minute),
			Opening{At: at, Open: true, Size: 50, Next: time.Minute}},
		{"default holdFor 30m: 30m after is outside", spec(nil, nil), at.Add(30 * time.Minute), Opening{At: at}},
		{"a fraction of a second in the time is dropped, as in the status", &ctfv1alpha1.PoolSpec{Max: 2, Opening: &ctfv1alpha1.PoolOpening{
			Time: metav1.NewTime(at.Add(500 * time.Millisecond)), Size: 5}}, at, Opening{At: at, Open: true, Size: 5, Next: 30 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(OpeningAt(tt.spec, tt.now)).To(Equal(tt.want))
		})
	}
}

// TestOpeningTarget: inside the window the pool holds the larger of its
// demand and the opening's size, which may exceed max; outside, its demand.
func TestOpeningTarget(t *testing.T) {
	tests := []struct {
		name           string
		opening        Opening
		normal, target int32
	}{
		{"no opening", Opening{}, 2, 2},
		{"before the window", Opening{Size: 50, Next: time.Hour}, 2, 2},
		{"inside: the opening's size", Opening{Open: true, Size: 50}, 2, 50},
		{"inside, demand above the size", Opening{Open: true, Size: 3}, 7, 7},
		{"inside, from an empty pool", Opening{Open: true, Size: 3}, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.opening.Target(tt.normal)).To(Equal(tt.target))
		})
	}
}

// TestOpeningAnnounce: a window's start and end are each announced when
// the status held the other; a moved or removed opening ends the window
// held; otherwise nothing.
func TestOpeningAnnounce(t *testing.T) {
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	later := at.Add(24 * time.Hour)
	held := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t.In(time.Local)} }
	tests := []struct {
		name    string
		opening Opening
		held    *metav1.Time
		want    *Announcement
	}{
		{"no opening, none held", Opening{}, nil, nil},
		{"before the window", Opening{At: at, Next: time.Hour}, nil, nil},
		{"the window starts", Opening{At: at, Open: true, Size: 3}, nil,
			&Announcement{ReasonOpening, "growing the pool to 4 for the opening at 2026-11-28T18:00:00Z", at}},
		{"inside, already held (in another zone)", Opening{At: at, Open: true, Size: 3}, held(at), nil},
		{"the window ends", Opening{At: at}, held(at),
			&Announcement{ReasonOpeningOver, "the opening at 2026-11-28T18:00:00Z is past: the pool goes back to its demand", at}},
		{"the opening removed inside its window", Opening{}, held(at),
			&Announcement{ReasonOpeningOver, "the opening at 2026-11-28T18:00:00Z was moved or removed: the pool goes back to its demand", at}},
		{"the opening moved a day later", Opening{At: later, Next: time.Hour}, held(at),
			&Announcement{ReasonOpeningOver, "the opening at 2026-11-28T18:00:00Z was moved or removed: the pool goes back to its demand", at}},
		{"the opening moved within the window: the new one starts", Opening{At: later, Open: true, Size: 3}, held(at),
			&Announcement{ReasonOpening, "growing the pool to 4 for the opening at 2026-11-29T18:00:00Z", later}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.opening.Announce(tt.held, 4)).To(Equal(tt.want))
		})
	}
}

// TestOpeningHeld: the status holds the opening's time inside its window
// only.
func TestOpeningHeld(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	g.Expect(Opening{At: at, Open: true}.Held()).To(Equal(&metav1.Time{Time: at}))
	g.Expect(Opening{At: at}.Held()).To(BeNil())
}

// TestDemandClock: the pools' clock is the demand's, or the time when it
// has none.
func TestDemandClock(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	g.Expect((&Demand{Now: func() time.Time { return at }}).Clock()).To(Equal(at))
	var none *Demand
	g.Expect(none.Clock()).To(BeTemporally("~", time.Now(), time.Minute))
}
