package instancer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/platformauth"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

// The platform's API: the CTF platform (never a team) asks whose a
// submitted flag is, and says when a team solved a challenge. Each call is
// signed on its own (platformauth): a team token, a call replayed or a
// body changed on the way is refused; a call that acts is refused when
// replayed to any replica (solves.go).

// verifyRequest is a submission the platform received.
type verifyRequest struct {
	Team     string `json:"team"`
	Template string `json:"template"`
	// Flag names one of the template's flags; it may be left out when the
	// template has one.
	Flag       string `json:"flag,omitempty"`
	Submission string `json:"submission"`
}

// Verdicts of a verification.
const (
	verdictCorrect = "correct"
	verdictWrong   = "wrong"
	// verdictShared is another team's flag of the challenge: Owner names it.
	verdictShared = "shared"
)

// Verification is the platform's answer: what the submission is, and
// whether to score it (a shared flag is scored only when the template says
// CorrectFlagged).
type Verification struct {
	Verdict  string `json:"verdict"`
	Accepted bool   `json:"accepted"`
	// Owner is the team whose flag a shared one is.
	Owner string `json:"owner,omitempty"`
	// Stopped says the team's instance was stopped (destroyOnSolve).
	Stopped bool `json:"stopped,omitempty"`
}

// solvedRequest says a team solved a template.
type solvedRequest struct {
	Team     string `json:"team"`
	Template string `json:"template"`
}

// Solved is the answer to a solved call.
type Solved struct {
	Stopped bool `json:"stopped"`
}

func (s *Server) verifyFlag(w http.ResponseWriter, r *http.Request, body []byte, call platformauth.Call) {
	ctx := r.Context()
	var req verifyRequest
	if err := decodeStrict(bytes.NewReader(body), &req, "team", "template", "flag", "submission"); err != nil {
		writeError(w, errBadRequest(`Send {"team", "template", "flag", "submission"}: `+err.Error()+"."))
		return
	}
	if apiErr := checkTeam(req.Team); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	t, f, apiErr := s.namedFlag(ctx, req.Template, req.Flag)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if s.FlagCodec == nil {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: "no_flag_key",
			Message: "The instancer has no flag key (the Secret challenge-operator-flag-key): it cannot verify flags."})
		return
	}
	answer, ready := judge(s.FlagCodec, t, f, req.Team, req.Submission)
	if !ready {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: "flag_not_ready", RetryAfter: 5, Message: fmt.Sprintf(
			"Flag %s of %s is static, and the operator has not published its digest (status.staticFlags): its Secret is missing or refused.", f.Name, t.Name)})
		return
	}
	if apiErr := s.actOnVerdict(ctx, t, f, req.Team, call, &answer); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	flagVerifications.WithLabelValues(t.Name, answer.Verdict).Inc()
	writeJSON(w, http.StatusOK, answer)
}

// actOnVerdict does what answer says beyond the answer itself, once across
// the replicas: a shared flag's Events and count; with destroyOnSolve, a
// correct flag's record, and the team's stop once every flag is verified.
func (s *Server) actOnVerdict(ctx context.Context, t *ctfv1alpha1.ChallengeTemplate, f *ctfv1alpha1.NamedFlag, team string, call platformauth.Call, answer *Verification) *apiError {
	switch {
	case answer.Verdict == verdictShared:
		if refusal, err := s.limits.takeCall(ctx, team, call, s.now(), nil); err != nil || refusal != nil {
			return s.refusal(ctx, refusal, err)
		}
		sharedFlags.WithLabelValues(t.Name).Inc()
		s.recordShared(ctx, t, f, team, answer.Owner)
	case answer.Verdict == verdictCorrect && destroysOnSolve(t):
		stopped, apiErr := s.solve(ctx, t, team, call, f.Name)
		if apiErr != nil {
			return apiErr
		}
		answer.Stopped = stopped
	}
	return nil
}

// refusal is a brake's refusal, or its failure, as an answer.
func (s *Server) refusal(ctx context.Context, refusal *apiError, err error) *apiError {
	if err != nil {
		return s.internal(ctx, err)
	}
	return refusal
}

// judge says what submission is for team's flag f of t, from the
// submission alone: flagtag opens a perTeam flag's body, which names its
// team; a static one is checked against its digest in the template's
// status (not ready while there is none), or against a previous one that a
// running instance still serves after the organiser changed the flag.
func judge(codec *flagtag.Codec, t *ctfv1alpha1.ChallengeTemplate, f *ctfv1alpha1.NamedFlag, team, submission string) (Verification, bool) {
	submission = strings.TrimSpace(submission)
	if f.Static != nil {
		i := slices.IndexFunc(t.Status.StaticFlags, func(d ctfv1alpha1.StaticFlagDigest) bool { return d.Name == f.Name })
		if i < 0 {
			return Verification{}, false
		}
		if verifyStatic(codec, t.Name, submission, &t.Status.StaticFlags[i]) {
			return Verification{Verdict: verdictCorrect, Accepted: true}, true
		}
		return Verification{Verdict: verdictWrong}, true
	}
	return judgePerTeam(codec, t, f, team, submission), true
}

// verifyStatic tells whether submission is static flag d of template: its
// value now, or one that running instances still serve.
func verifyStatic(codec *flagtag.Codec, template, submission string, d *ctfv1alpha1.StaticFlagDigest) bool {
	if codec.VerifyStatic(template, d.Name, submission, d.Digest) {
		return true
	}
	return slices.ContainsFunc(d.Previous, func(p ctfv1alpha1.PreviousStaticFlag) bool {
		return codec.VerifyStatic(template, d.Name, submission, p.Digest)
	})
}

// judgePerTeam says what submission is for team's perTeam flag f of t.
func judgePerTeam(codec *flagtag.Codec, t *ctfv1alpha1.ChallengeTemplate, f *ctfv1alpha1.NamedFlag, team, submission string) Verification {
	body, ok := ctfflag.BodyOf(cmp.Or(f.PerTeam.Format, ctfflag.DefaultFormat), submission)
	if !ok {
		return Verification{Verdict: verdictWrong}
	}
	switch verdict, owner := codec.Verify(t.Name, f.Name, team, body); verdict {
	case flagtag.Correct:
		return Verification{Verdict: verdictCorrect, Accepted: true}
	case flagtag.OtherTeam:
		accepted := t.Spec.Submissions != nil && t.Spec.Submissions.SharedFlag == ctfv1alpha1.SharedFlagCorrectFlagged
		return Verification{Verdict: verdictShared, Accepted: accepted, Owner: owner}
	}
	return Verification{Verdict: verdictWrong}
}

func (s *Server) solved(w http.ResponseWriter, r *http.Request, body []byte, call platformauth.Call) {
	ctx := r.Context()
	var req solvedRequest
	if err := decodeStrict(bytes.NewReader(body), &req, "team", "template"); err != nil {
		writeError(w, errBadRequest(`Send {"team", "template"}: `+err.Error()+"."))
		return
	}
	if apiErr := checkTeam(req.Team); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	t, apiErr := s.template(ctx, req.Template)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if !destroysOnSolve(t) {
		writeJSON(w, http.StatusOK, Solved{})
		return
	}
	stopped, apiErr := s.solve(ctx, t, req.Team, call, "")
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	writeJSON(w, http.StatusOK, Solved{Stopped: stopped})
}

func destroysOnSolve(t *ctfv1alpha1.ChallengeTemplate) bool {
	return t.Spec.Submissions != nil && t.Spec.Submissions.DestroyOnSolve
}

// solve takes call, a notice that team solved t (flag verified correct, or
// the whole template when flag is empty), and stops the team's instance as
// the team's own stop does (stop), with an Event and a count, when the
// solve is complete: a solved notice, or every flag of t verified. It
// stops only an instance that ran when the call was signed, and each
// instance once, whichever replicas the notices reach; true when this call
// stopped it.
func (s *Server) solve(ctx context.Context, t *ctfv1alpha1.ChallengeTemplate, team string, call platformauth.Call, flag string) (bool, *apiError) {
	ch, apiErr := s.solvedInstance(ctx, t, team, call.IssuedAt)
	if apiErr != nil {
		return false, apiErr
	}
	var uid types.UID
	if ch != nil {
		uid = ch.UID
	}
	flags := make([]string, len(t.Spec.Flags))
	for i := range t.Spec.Flags {
		flags[i] = t.Spec.Flags[i].Name
	}
	var complete, first bool
	now := s.now()
	refusal, err := s.limits.takeCall(ctx, team, call, now, func(r *teamLimits) {
		complete, first = r.solve(t.Name, flags, flag, uid, now, s.limits.cooldown)
	})
	if err != nil || refusal != nil {
		return false, s.refusal(ctx, refusal, err)
	}
	if ch == nil || !complete {
		return false, nil
	}
	// Deleted by every notice that finds it complete, the first or not: a
	// replica killed between the record and its delete leaves no instance
	// running that a solve stopped. Exactly the instance read, not a
	// successor of the same name.
	if err := s.Client.Delete(ctx, ch, client.Preconditions{UID: &ch.UID}); err != nil && !apierrors.IsNotFound(err) {
		return false, s.internal(ctx, err)
	}
	if !first {
		return false, nil
	}
	solveStops.WithLabelValues(t.Name).Inc()
	s.event(ch, corev1.EventTypeNormal, "StoppedOnSolve", fmt.Sprintf("Team %s solved %s: its instance is stopped (destroyOnSolve).", team, t.Name))
	return true, nil
}

// solvedInstance is team's instance of t that a solve signed at issued
// stops, as the API server has it now; nil when none: none running, one
// stopping already, or one started after issued (a notice delivered late,
// or replayed, is about an instance that no longer runs).
func (s *Server) solvedInstance(ctx context.Context, t *ctfv1alpha1.ChallengeTemplate, team string, issued time.Time) (*ctfv1alpha1.Challenge, *apiError) {
	ch, apiErr := s.own(ctx, s.live.reader(s.Client, team), t.Name, team)
	if apiErr == errNotFound {
		return nil, nil
	}
	if apiErr != nil {
		return nil, apiErr
	}
	if ch.DeletionTimestamp != nil {
		return nil, nil
	}
	// The cache may not show yet the stop a first notice of this solve
	// made: the instance is read again from the API server.
	live := &ctfv1alpha1.Challenge{}
	switch err := s.liveReader().Get(ctx, client.ObjectKeyFromObject(ch), live); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, s.internal(ctx, err)
	case live.UID != ch.UID || live.DeletionTimestamp != nil:
		return nil, nil
	case live.CreationTimestamp.After(issued.Truncate(time.Second)):
		// Both times are whole seconds: an instance created in the second
		// the call was signed in is stopped.
		return nil, nil
	}
	return live, nil
}

// recordShared writes a shared flag as an Event on both teams' instances of
// t in the instancer's namespace, whoever created them (the instancer or
// the platform): never the flag itself.
func (s *Server) recordShared(ctx context.Context, t *ctfv1alpha1.ChallengeTemplate, f *ctfv1alpha1.NamedFlag, team, owner string) {
	var list ctfv1alpha1.ChallengeList
	if err := s.Client.List(ctx, &list, client.InNamespace(s.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "listing Challenges for a shared flag's Events")
		return
	}
	for i := range list.Items {
		ch := &list.Items[i]
		if ch.Spec.Template != t.Name || ch.DeletionTimestamp != nil {
			continue
		}
		switch ch.Spec.Participant {
		case team:
			s.event(ch.DeepCopy(), corev1.EventTypeWarning, "SharedFlag", fmt.Sprintf("Team %s submitted team %s's flag %s of %s.", team, owner, f.Name, t.Name))
		case owner:
			s.event(ch.DeepCopy(), corev1.EventTypeWarning, "SharedFlag", fmt.Sprintf("Team %s's flag %s of %s was submitted by team %s.", owner, f.Name, t.Name, team))
		}
	}
}

func (s *Server) event(ch *ctfv1alpha1.Challenge, eventType, reason, message string) {
	if s.Recorder != nil {
		s.Recorder.Eventf(ch, nil, eventType, reason, "Verify", "%s", message)
	}
}

// template is the template name names, any template: the platform verifies
// flags of templates teams start elsewhere too.
func (s *Server) template(ctx context.Context, name string) (*ctfv1alpha1.ChallengeTemplate, *apiError) {
	t := &ctfv1alpha1.ChallengeTemplate{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, &apiError{Status: http.StatusNotFound, Code: "template_not_found", Message: fmt.Sprintf("There is no template %q.", name)}
		}
		return nil, s.internal(ctx, err)
	}
	return t, nil
}

// namedFlag is the template's flag name names, its only one when name is
// empty.
func (s *Server) namedFlag(ctx context.Context, template, name string) (*ctfv1alpha1.ChallengeTemplate, *ctfv1alpha1.NamedFlag, *apiError) {
	t, apiErr := s.template(ctx, template)
	if apiErr != nil {
		return nil, nil, apiErr
	}
	flags := t.Spec.Flags
	if name == "" && len(flags) == 1 {
		return t, &flags[0], nil
	}
	for i := range flags {
		if flags[i].Name == name {
			return t, &flags[i], nil
		}
	}
	if name == "" {
		return nil, nil, errBadRequest(fmt.Sprintf("Template %s has %d flags (spec.flags): name one.", t.Name, len(flags)))
	}
	return nil, nil, &apiError{Status: http.StatusNotFound, Code: "flag_not_found", Message: fmt.Sprintf("Template %s has no flag %q.", t.Name, name)}
}

// checkTeam refuses a team id that could be no participant's.
func checkTeam(team string) *apiError {
	if !token.IsTeam(team) {
		return errBadRequest(`"team" must be a team id: a DNS label, as spec.participant.`)
	}
	return nil
}

// platformCall reads a platform call's body and passes it to h once the
// call's signature holds for it.
func (s *Server) platformCall(h func(http.ResponseWriter, *http.Request, []byte, platformauth.Call)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			writeError(w, errUnauthorized("A platform call carries a signed token in its Authorization header."))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			writeError(w, errBadRequest("The body is too large."))
			return
		}
		call, err := s.platform.verify(strings.TrimSpace(raw), r.Method, r.URL.RequestURI(), body, s.now())
		if errors.Is(err, platformauth.ErrReplayCacheFull) {
			writeError(w, errPlatformBusy)
			return
		}
		if err != nil {
			logf.FromContext(r.Context()).Info("platform call refused", "reason", err.Error())
			writeError(w, errPlatformToken)
			return
		}
		h(w, r, body, call)
	})
}

// platformCalls verifies the platform's calls with the keys of their own
// directory, read again at most every `every` as the team keys are.
type platformCalls struct {
	dir   string
	every time.Duration

	// replays remembers the calls taken, for the process's life: a
	// replica's own, the first filter. A call that acts is recorded in its
	// team's Lease as well, which every replica reads (solves.go).
	replays *platformauth.ReplayCache

	mu     sync.Mutex
	at     time.Time
	loaded bool
	keys   token.Keys
	report string
}

func (p *platformCalls) verify(raw, method, path string, body []byte, now time.Time) (platformauth.Call, error) {
	return platformauth.Verifier{Keys: p.get(now), Replays: p.replays}.VerifyCall(raw, method, path, body, now)
}

// get returns the platform keys in force at now.
func (p *platformCalls) get(now time.Time) token.Keys {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loaded && now.Sub(p.at) < p.every {
		return p.keys
	}
	p.loaded, p.at = true, now
	keys, skipped, err := token.LoadDir(p.dir)
	p.keys = keys
	ids := slices.Sorted(maps.Keys(keys))
	if report := fmt.Sprint(ids, err, skipped); report != p.report {
		p.report = report
		log := logf.Log.WithName("instancer")
		log.Info("platform keys in force", "keyIDs", ids)
		if len(ids) == 0 {
			log.Error(err, "no valid platform key: every platform call is refused", "dir", p.dir)
		}
		for _, s := range skipped {
			log.Error(s, "platform key file skipped", "dir", p.dir, "file", s.Name, "reason", s.Reason)
		}
	}
	return p.keys
}
