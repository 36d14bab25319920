package instancer

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=system

// limitsLeasePrefix names a team's Lease: instancer-limits-<team>. A team id
// is a DNS label, so no team's Lease is another Lease of the namespace (the
// operator's leader election Lease has dots in its name).
const limitsLeasePrefix = "instancer-limits-"

// window is the span starts are counted over.
const window = time.Minute

// maxStreamsPerTeam bounds a team's open event streams on one replica: each
// holds a connection.
const maxStreamsPerTeam = 8

// A team's event stream opens on one replica draw on a bucket: a page's
// load (a stream per card) and a reload fit the burst, reconnects after a
// proxy's idle timeout the rate; a loop of opens is answered 429 (100 in
// 5 s were all served).
const (
	streamOpensPerSecond = 0.5
	streamOpensBurst     = 2 * maxStreamsPerTeam
)

// streamsFullWait is the Retry-After of a team's stream refused for having
// too many open: nothing says when one closes, so a page looks again
// after a while rather than at once.
const streamsFullWait = 10 * time.Second

// conflictBackoff retries a team's Lease update that lost a race with
// another request (on any replica) for the same team.
var conflictBackoff = wait.Backoff{Steps: 12, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 0.5}

// teamLimits is what a team's Lease records: enough to judge its next start
// on any replica, after any restart.
type teamLimits struct {
	// Starts are the team's starts within the last window, oldest first.
	Starts []time.Time `json:"starts,omitempty"`
	// Stopped maps a template to when the team stopped its instance, while
	// the cooldown runs.
	Stopped map[string]time.Time `json:"stopped,omitempty"`
	// Renewed maps a template to when the team last renewed its instance,
	// while the renewal interval runs.
	Renewed map[string]time.Time `json:"renewed,omitempty"`
	// Calls are the platform calls that acted on the team (callKey of the
	// token's jti -> its expiry), until they expire: the replay memory all
	// replicas share (a replica's own, in platformauth, is only the first
	// filter).
	Calls map[string]time.Time `json:"calls,omitempty"`
	// Flags maps a destroyOnSolve template to the flags the platform has
	// verified correct for the team, sorted: its instance stops once they
	// are all of the template's.
	Flags map[string][]string `json:"flags,omitempty"`
	// SolveStops maps a template to the UID of the team's instance a solve
	// last stopped: each instance is stopped, counted and cooled down for
	// once, however many notices of its solve arrive, wherever.
	SolveStops map[string]types.UID `json:"solveStops,omitempty"`
}

// renew decides a renewal of template at now: a refusal with how long to
// wait, or nil after recording it. Each renewal is a new generation of the
// Challenge and a Helm upgrade, so one an interval is plenty.
func (s *teamLimits) renew(template string, now time.Time, interval time.Duration) *apiError {
	for tmpl, at := range s.Renewed {
		if !at.Add(interval).After(now) {
			delete(s.Renewed, tmpl)
		}
	}
	if at, ok := s.Renewed[template]; ok {
		return errWait("rate_limited", "You renewed this instance a moment ago.", at.Add(interval).Sub(now))
	}
	if s.Renewed == nil {
		s.Renewed = map[string]time.Time{}
	}
	s.Renewed[template] = now
	return nil
}

// prune forgets what no longer limits anything at now.
func (s *teamLimits) prune(now time.Time, cooldown time.Duration) {
	s.Starts = slices.DeleteFunc(s.Starts, func(t time.Time) bool { return !t.After(now.Add(-window)) })
	for tmpl, at := range s.Stopped {
		if !at.Add(cooldown).After(now) {
			delete(s.Stopped, tmpl)
		}
	}
	if len(s.Stopped) == 0 {
		s.Stopped = nil
	}
}

// admit decides a start of template at now: a refusal with how long to
// wait, or nil after recording the start.
func (s *teamLimits) admit(template string, now time.Time, startsPerMinute int, cooldown time.Duration) *apiError {
	s.prune(now, cooldown)
	if at, ok := s.Stopped[template]; ok {
		return errWait("cooldown", "You stopped this challenge a moment ago.", at.Add(cooldown).Sub(now))
	}
	if startsPerMinute > 0 && len(s.Starts) >= startsPerMinute {
		oldest := s.Starts[len(s.Starts)-startsPerMinute]
		return errWait("rate_limited", "Your team has started too many instances in the last minute.", oldest.Add(window).Sub(now))
	}
	if startsPerMinute > 0 {
		s.Starts = append(s.Starts, now)
	}
	return nil
}

// clone is a copy of s that shares nothing with it.
func (s teamLimits) clone() teamLimits {
	c := teamLimits{Starts: slices.Clone(s.Starts), Stopped: maps.Clone(s.Stopped), Renewed: maps.Clone(s.Renewed),
		Calls: maps.Clone(s.Calls), SolveStops: maps.Clone(s.SolveStops)}
	if s.Flags != nil {
		c.Flags = make(map[string][]string, len(s.Flags))
		for tmpl, flags := range s.Flags {
			c.Flags[tmpl] = slices.Clone(flags)
		}
	}
	return c
}

// stop records that the team stopped template at now.
func (s *teamLimits) stop(template string, now time.Time, cooldown time.Duration) {
	s.prune(now, cooldown)
	if s.Stopped == nil {
		s.Stopped = map[string]time.Time{}
	}
	s.Stopped[template] = now
}

// limits are the per-team brakes: at most startsPerMinute starts in any
// minute, and a cooldown before a team may start a template again after
// stopping it. They are kept in the cluster, one Lease per team in the
// instancer's namespace, and changed with optimistic concurrency, so they
// hold across replicas and restarts. Each replica remembers the last record
// of a team's it read or wrote: a record only gains entries until they
// expire, so what it refuses the Lease refuses too, and a refusal it already
// knows of costs no request (a loop of refused starts read the Lease each
// time). Open event streams are counted and their opens rate limited per
// replica: a stream is a connection to that replica.
type limits struct {
	startsPerMinute int
	cooldown        time.Duration
	renewInterval   time.Duration
	namespace       string
	// reader reads Leases from the API server (never a cache: a decision
	// on a stale record would be wrong); writer creates and updates them.
	reader client.Reader
	writer client.Writer

	mu      sync.Mutex
	streams map[string]int // team -> open event streams
	// opens are the team's buckets of stream opens.
	opens map[string]*rate.Limiter
	// known is each team's record as last read or written by this replica.
	known map[string]teamLimits
}

func newLimits(opts Options, reader client.Reader, writer client.Writer) *limits {
	return &limits{startsPerMinute: opts.StartsPerMinute, cooldown: opts.Cooldown, renewInterval: opts.RenewInterval, namespace: opts.Namespace,
		reader: reader, writer: writer, streams: map[string]int{}, opens: map[string]*rate.Limiter{}, known: map[string]teamLimits{}}
}

// admitStart records a start of template by team, or returns why it must
// wait (cooldown, rate_limited).
func (l *limits) admitStart(ctx context.Context, team, template string, now time.Time) (*apiError, error) {
	if l.startsPerMinute <= 0 && l.cooldown <= 0 {
		return nil, nil
	}
	return l.admit(ctx, team, "Your team is starting many instances at once.", l.decideStart(template, now))
}

// refusesStart is the refusal of a start of template by team that this
// replica already knows of, without asking the API server; nil when it
// knows of none (admitStart decides then).
func (l *limits) refusesStart(team, template string, now time.Time) *apiError {
	if l.startsPerMinute <= 0 && l.cooldown <= 0 {
		return nil
	}
	return l.knownRefusal(team, l.decideStart(template, now))
}

func (l *limits) decideStart(template string, now time.Time) func(*teamLimits) (*apiError, bool) {
	return func(s *teamLimits) (*apiError, bool) {
		refusal := s.admit(template, now, l.startsPerMinute, l.cooldown)
		return refusal, refusal == nil && l.startsPerMinute > 0
	}
}

// admitRenew records a renewal of template by team, or returns how long it
// must wait (rate_limited).
func (l *limits) admitRenew(ctx context.Context, team, template string, now time.Time) (*apiError, error) {
	if l.renewInterval <= 0 {
		return nil, nil
	}
	return l.admit(ctx, team, "Your team is renewing many times at once.", func(s *teamLimits) (*apiError, bool) {
		refusal := s.renew(template, now, l.renewInterval)
		return refusal, refusal == nil
	})
}

// knownRefusal runs decide on a copy of the team's record this replica
// knows of, and returns its refusal.
func (l *limits) knownRefusal(team string, decide func(*teamLimits) (*apiError, bool)) *apiError {
	l.mu.Lock()
	state, ok := l.known[team]
	l.mu.Unlock()
	if !ok {
		return nil
	}
	state = state.clone()
	refusal, _ := decide(&state)
	return refusal
}

// remember keeps state as team's record known to this replica.
func (l *limits) remember(team string, state teamLimits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.known[team] = state.clone()
}

// admit runs decide on team's record and keeps what it changed when it says
// so; a refusal this replica already knows of is answered without reading
// the record. A team whose every retry lost to another request of its own
// is in a burst, answered as one: rate_limited with burst as the reason.
func (l *limits) admit(ctx context.Context, team, burst string, decide func(*teamLimits) (*apiError, bool)) (*apiError, error) {
	if refusal := l.knownRefusal(team, decide); refusal != nil {
		return refusal, nil
	}
	var refusal *apiError
	err := l.update(ctx, team, func(s *teamLimits) bool {
		var write bool
		refusal, write = decide(s)
		return write
	})
	if apierrors.IsConflict(err) {
		return errWait("rate_limited", burst, time.Second), nil
	}
	return refusal, err
}

// stoppedAt records that team stopped template at now.
func (l *limits) stoppedAt(ctx context.Context, team, template string, now time.Time) error {
	if l.cooldown <= 0 {
		return nil
	}
	return l.update(ctx, team, func(s *teamLimits) bool {
		s.stop(template, now, l.cooldown)
		return true
	})
}

// update reads team's Lease, lets change edit its record, and writes it
// back when change says so, under the resourceVersion read: a concurrent
// change on any replica makes the write fail, and the whole read-decide-write
// runs again on the newer record.
func (l *limits) update(ctx context.Context, team string, change func(*teamLimits) (write bool)) error {
	key := client.ObjectKey{Namespace: l.namespace, Name: limitsLeasePrefix + team}
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(conflictBackoff, retriable, func() error {
		lease := &coordinationv1.Lease{}
		err := l.reader.Get(ctx, key, lease)
		found := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		var state teamLimits
		if raw := lease.Annotations[ctfv1alpha1.InstancerLimitsAnnotation]; raw != "" {
			// A record nobody can read limits nothing; the write replaces it.
			_ = json.Unmarshal([]byte(raw), &state)
		}
		l.remember(team, state)
		if !change(&state) {
			return nil
		}
		data, err := json.Marshal(state)
		if err != nil {
			return err
		}
		if !found {
			lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{ctfv1alpha1.ParticipantLabel: team, ctfv1alpha1.CreatedByLabel: createdBy}}}
		}
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		lease.Annotations[ctfv1alpha1.InstancerLimitsAnnotation] = string(data)
		if !found {
			err = l.writer.Create(ctx, lease)
		} else {
			err = l.writer.Update(ctx, lease)
		}
		if err == nil {
			l.remember(team, state)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("recording team %s's limits in Lease %s: %w", team, key, err)
	}
	return nil
}

// openStream counts a stream of team, unless it opened too many lately or
// has too many open (the refusal says which); release ends it.
func (l *limits) openStream(team string, now time.Time) (release func(), refusal *apiError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	bucket, ok := l.opens[team]
	if !ok {
		bucket = rate.NewLimiter(streamOpensPerSecond, streamOpensBurst)
		l.opens[team] = bucket
	}
	if r := bucket.ReserveN(now, 1); r.DelayFrom(now) > 0 {
		delay := r.DelayFrom(now)
		r.CancelAt(now)
		return nil, errWait("rate_limited", "Your team opened this page's live updates too often.", delay)
	}
	if l.streams[team] >= maxStreamsPerTeam {
		return nil, &apiError{Status: http.StatusTooManyRequests, Code: "too_many_streams", RetryAfter: int(streamsFullWait / time.Second),
			Message: "Your team has this page open in too many tabs; close some and reload."}
	}
	l.streams[team]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.streams[team]--; l.streams[team] <= 0 {
			delete(l.streams, team)
		}
	}, nil
}
