package instancer

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limits are the per-team brakes: a token bucket of starts per minute, and a
// cooldown before a team may start a template again after stopping it.
type limits struct {
	startsPerMinute int
	cooldown        time.Duration

	mu      sync.Mutex
	starts  map[string]*rate.Limiter
	stopped map[string]time.Time // team/template -> when it was stopped
	streams map[string]int       // team -> open event streams
}

// maxStreamsPerTeam bounds a team's open event streams: each holds a
// connection and an informer handler.
const maxStreamsPerTeam = 8

func newLimits(startsPerMinute int, cooldown time.Duration) *limits {
	return &limits{startsPerMinute: startsPerMinute, cooldown: cooldown,
		starts: map[string]*rate.Limiter{}, stopped: map[string]time.Time{}, streams: map[string]int{}}
}

// coolingDown returns how long team must still wait to start template again.
func (l *limits) coolingDown(team, template string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.stopped[team+"/"+template]
	if !ok {
		return 0
	}
	if wait := at.Add(l.cooldown).Sub(now); wait > 0 {
		return wait
	}
	delete(l.stopped, team+"/"+template)
	return 0
}

// allowStart takes a start from team's bucket, or says how long to wait.
func (l *limits) allowStart(team string, now time.Time) (ok bool, wait time.Duration) {
	if l.startsPerMinute <= 0 {
		return true, 0
	}
	l.mu.Lock()
	lim, found := l.starts[team]
	if !found {
		lim = rate.NewLimiter(rate.Every(time.Minute/time.Duration(l.startsPerMinute)), l.startsPerMinute)
		l.starts[team] = lim
	}
	l.mu.Unlock()
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// stoppedAt records that team stopped template.
func (l *limits) stoppedAt(team, template string, now time.Time) {
	if l.cooldown <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped[team+"/"+template] = now
}

// openStream counts a stream of team, unless it has too many open; release
// ends it.
func (l *limits) openStream(team string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams[team] >= maxStreamsPerTeam {
		return nil, false
	}
	l.streams[team]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.streams[team]--; l.streams[team] <= 0 {
			delete(l.streams, team)
		}
	}, true
}
