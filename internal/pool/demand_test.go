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

// TestHoldAndWaited: work is held while teams ask, at most patience after
// it was first held, and forgotten once it runs; work that follows from
// held work (Waited) counts its wait from that work's, never a later one.
func TestHoldAndWaited(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	d := &Demand{Now: func() time.Time { return now }}
	const quiet, patience = 2 * time.Second, 10 * time.Second
	check := func(key string, wantWait time.Duration) time.Time {
		t.Helper()
		wait, since := d.Hold(key, quiet, patience)
		if wait != wantWait {
			t.Fatalf("%s at %s: wait %s, want %s", key, now.Format(time.TimeOnly), wait, wantWait)
		}
		return since
	}
	if wait, since := (*Demand)(nil).Hold("a", quiet, patience); wait != 0 || !since.IsZero() {
		t.Fatalf("no demand: wait %s since %s", wait, since)
	}
	check("a", 0) // nobody asked
	d.Add("web")
	t0 := now
	if since := check("a", quiet); !since.Equal(t0) {
		t.Fatalf("held since %s, want %s", since, t0)
	}
	now = now.Add(9 * time.Second)
	d.Add("web")
	check("a", time.Second)
	d.Waited("b", t0)                  // follows from a: has waited 9 s already
	d.Waited("b", t0.Add(time.Second)) // a later start changes nothing
	d.Waited("c", time.Time{})         // nothing held: nothing recorded
	check("b", time.Second)
	check("c", quiet)
	now = now.Add(time.Second)
	if since := check("a", 0); !since.Equal(t0) {
		t.Fatalf("run after patience: since %s, want %s", since, t0)
	}
	check("b", 0)
	check("a", time.Second) // forgotten once run: held afresh, for what is left of quiet
	now = now.Add(quiet)
	check("c", 0) // quiet
}
