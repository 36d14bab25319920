package instancer

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/challenge-operator/challenge-operator/internal/platformauth"
)

// A platform call that acts on a team (stops its instance, records its
// flags, writes a shared flag's Events) is taken once across every replica:
// its jti is recorded in the team's Lease, in the same write as what it
// does, under the Lease's resourceVersion. Two replicas taking one call, or
// two notices of one solve, race for that write and exactly one does what
// they say. A call that changes nothing (a wrong flag; a correct one of a
// template that does not stop on solve) is answered from the replica's own
// replay memory alone, at no request: replayed elsewhere, it repeats an
// answer its holder has read already.

// callRecordSlack is how long past its token's expiry a call stays
// recorded: each replica judges expiry by its own clock, and one a little
// behind would still take the token.
const callRecordSlack = time.Minute

// maxCallsPerTeam bounds the calls one team's record holds (some 50 bytes
// each, in a Lease's annotations): more acting calls about one team within
// a token's lifetime are answered busy, not recorded.
const maxCallsPerTeam = 1000

var (
	// errPlatformToken answers a platform call whose token is refused.
	errPlatformToken = errUnauthorized("The platform call's token is not valid (unknown key, expired, replayed, or signed for another request).")
	// errPlatformBusy answers a platform call the instancer cannot record
	// now: the platform signs it again and retries.
	errPlatformBusy = &apiError{Status: http.StatusServiceUnavailable, Code: "busy", Message: "Too many platform calls at once; try again.", RetryAfter: 5}
)

// callKey is the record's key of a call's jti: short and of one shape,
// whatever the platform's jti (up to 128 bytes) holds.
func callKey(jti string) string {
	sum := sha256.Sum256([]byte(jti))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// spend records the call of key, whose token expires at exp, as taken at
// now; it refuses a call taken before (errPlatformToken) and one beyond
// maxCallsPerTeam (errPlatformBusy).
func (s *teamLimits) spend(key string, exp, now time.Time) *apiError {
	for k, at := range s.Calls {
		if !at.Add(callRecordSlack).After(now) {
			delete(s.Calls, k)
		}
	}
	if _, taken := s.Calls[key]; taken {
		return errPlatformToken
	}
	if len(s.Calls) >= maxCallsPerTeam {
		return errPlatformBusy
	}
	if s.Calls == nil {
		s.Calls = map[string]time.Time{}
	}
	s.Calls[key] = exp
	return nil
}

// solve records a notice of a solve of template: flag verified correct, or
// the whole template solved when flag is empty. It says whether the solve
// is complete (every one of flags verified, or a solved notice) and, if
// so, whether this notice is the first to stop instance (its UID; none
// when no instance is to stop), recording the stop and its cooldown.
func (s *teamLimits) solve(template string, flags []string, flag string, instance types.UID, now time.Time, cooldown time.Duration) (complete, first bool) {
	complete = flag == ""
	if flag != "" {
		verified := s.Flags[template]
		if i, found := slices.BinarySearch(verified, flag); !found {
			verified = slices.Insert(slices.Clip(verified), i, flag)
		}
		if s.Flags == nil {
			s.Flags = map[string][]string{}
		}
		s.Flags[template] = verified
		complete = !slices.ContainsFunc(flags, func(f string) bool {
			_, found := slices.BinarySearch(verified, f)
			return !found
		})
	}
	if !complete || instance == "" || s.SolveStops[template] == instance {
		return complete, false
	}
	if s.SolveStops == nil {
		s.SolveStops = map[string]types.UID{}
	}
	s.SolveStops[template] = instance
	if cooldown > 0 {
		s.stop(template, now, cooldown)
	}
	return true, true
}

// takeCall records call as taken in team's record and, when act is not
// nil, lets act change the record in the same write. It refuses a call any
// replica took before (errPlatformToken), and answers busy when the record
// is full or every retry lost to another write of the team's.
func (l *limits) takeCall(ctx context.Context, team string, call platformauth.Call, now time.Time, act func(*teamLimits)) (*apiError, error) {
	var refusal *apiError
	err := l.update(ctx, team, func(s *teamLimits) bool {
		if refusal = s.spend(callKey(call.ID), call.ExpiresAt, now); refusal != nil {
			return false
		}
		if act != nil {
			act(s)
		}
		return true
	})
	if apierrors.IsConflict(err) {
		return errPlatformBusy, nil
	}
	return refusal, err
}
