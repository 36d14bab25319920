package pool

import (
	"testing"
	"time"
)

func TestDemandFollowsTheBusiestRecentMinute(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	d := &Demand{Now: func() time.Time { return now }}
	if got := d.Target("web", 2, 10); got != 2 {
		t.Fatalf("no demand: target %d, want min 2", got)
	}
	for range 7 {
		d.Add("web")
	}
	d.Add("other")
	if got := d.Busy(2 * time.Second); got != 2*time.Second {
		t.Fatalf("right after a claim: busy for %s, want 2s", got)
	}
	if got := d.Target("web", 2, 10); got != 7 {
		t.Fatalf("7 claims this minute: target %d, want 7", got)
	}
	if got := d.Target("web", 2, 5); got != 5 {
		t.Fatalf("target %d beyond max 5", got)
	}
	now = now.Add(2 * time.Minute)
	d.Add("web")
	if got := d.Peak("web"); got != 7 {
		t.Fatalf("two minutes later the peak is %d, want 7 still", got)
	}
	now = now.Add(4 * time.Minute)
	if got := d.Peak("web"); got != 1 {
		t.Fatalf("six minutes later the peak is %d, want the later minute's 1", got)
	}
	now = now.Add(10 * time.Minute)
	if got := d.Target("web", 2, 10); got != 2 {
		t.Fatalf("after the window: target %d, want min 2", got)
	}
	if got := d.Busy(2 * time.Second); got != 0 {
		t.Fatalf("long after the last claim: busy for %s", got)
	}
	if got := d.Peak("other"); got != 0 {
		t.Fatalf("other's demand has aged out: %d", got)
	}
}
