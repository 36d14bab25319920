package instancer

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/proofofwork"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

// The actions a template's proof of work is asked for; a challenge names
// one, and its solution serves no other.
const (
	actionStart = "start"
	actionRenew = "renew"
)

// proofOfWorkKeyLabel makes the proof-of-work key from a token key: no
// other use of that key yields the same bytes.
const proofOfWorkKeyLabel = "challenge-operator instancer: proof of work v1"

// ProofOfWorkKey is the key the instancer signs its proof-of-work
// challenges with: derived from the token key of the lowest key id and the
// instancer's audience, so that every replica verifies what any issued and
// another instancer sharing the keys does not. A rotation that removes
// that key refuses the challenges in flight (two minutes' worth); the page
// asks for a new one. Nil without keys (every token is refused then).
func ProofOfWorkKey(keys token.Keys, audience string) []byte {
	ids := slices.Sorted(maps.Keys(keys))
	if len(ids) == 0 {
		return nil
	}
	mac := hmac.New(sha256.New, keys[ids[0]])
	mac.Write([]byte(proofOfWorkKeyLabel + "\x00" + cmp.Or(audience, token.Audience)))
	return mac.Sum(nil)
}

func (s *Server) proofOfWorkKey() []byte {
	keys, _ := s.creds.get(s.now())
	return ProofOfWorkKey(keys, s.Audience)
}

// asksProofOfWork tells whether starts and renewals of t need a proof of
// work.
func asksProofOfWork(t *ctfv1alpha1.ChallengeTemplate) bool {
	return t.Spec.Instancer != nil && t.Spec.Instancer.ProofOfWork != nil
}

// errNoProofOfWork answers a challenge asked of a template that needs none.
var errNoProofOfWork = &apiError{Status: http.StatusNotFound, Code: "proof_of_work_not_required",
	Message: "This challenge asks for no proof of work: start and renew it directly."}

// errProofOfWorkInvalid answers a solution that is wrong, expired, used
// already, or for another team, template or action: the page then solves
// a new challenge.
var errProofOfWorkInvalid = &apiError{Status: http.StatusForbidden, Code: "proof_of_work_invalid",
	Message: "The proof of work is not valid (wrong, expired, used already, or solved for another request); solve a new one."}

func errProofOfWorkRequired(template, action string) *apiError {
	return &apiError{Status: http.StatusPreconditionRequired, Code: "proof_of_work_required",
		Message: fmt.Sprintf("This challenge asks for a proof of work first: solve GET /api/v1/instances/%s/challenge?action=%s and send its solution as proofOfWork.", template, action)}
}

// issueChallenge answers a proof-of-work challenge for the team's action
// (the query's action: start or renew) on the path's template. It costs
// no API request (the template is read from the cache) and a few
// microseconds.
func (s *Server) issueChallenge(w http.ResponseWriter, r *http.Request, team string) {
	action := r.URL.Query().Get("action")
	if action != actionStart && action != actionRenew {
		writeError(w, errBadRequest(`Ask for a challenge with ?action=start or ?action=renew.`))
		return
	}
	t, apiErr := s.startable(r.Context(), r.PathValue("template"))
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if !asksProofOfWork(t) {
		writeError(w, errNoProofOfWork)
		return
	}
	purpose := proofofwork.Purpose{Team: team, Template: t.Name, Action: action}
	c, err := proofofwork.New(s.proofOfWorkKey(), purpose, int64(t.Spec.Instancer.ProofOfWork.Difficulty), s.now())
	if err != nil {
		writeError(w, s.internal(r.Context(), err))
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// proven checks the proof of work of team's action on t: nil when t asks
// none or the solution holds (it is then used up on this replica), else
// the refusal. It costs no API request.
func (s *Server) proven(t *ctfv1alpha1.ChallengeTemplate, team, action, solution string) *apiError {
	if !asksProofOfWork(t) {
		return nil
	}
	if solution == "" {
		proofsOfWork.WithLabelValues(action, "required").Inc()
		return errProofOfWorkRequired(t.Name, action)
	}
	purpose := proofofwork.Purpose{Team: team, Template: t.Name, Action: action}
	if err := s.proofs.Verify(s.proofOfWorkKey(), solution, purpose, s.now()); err != nil {
		proofsOfWork.WithLabelValues(action, refusalOf(err)).Inc()
		return errProofOfWorkInvalid
	}
	proofsOfWork.WithLabelValues(action, "accepted").Inc()
	return nil
}

// refusalOf names why a solution was refused, for the counter.
func refusalOf(err error) string {
	switch {
	case errors.Is(err, proofofwork.ErrExpired):
		return "expired"
	case errors.Is(err, proofofwork.ErrPurpose):
		return "other_purpose"
	case errors.Is(err, proofofwork.ErrReplayed):
		return "replayed"
	}
	return "wrong"
}

// renewRequest is a renewal's body, which may be empty.
type renewRequest struct {
	ProofOfWork string `json:"proofOfWork"`
}

// decodeRenew reads a renewal's body: none, or one strict JSON object.
func decodeRenew(body io.Reader) (renewRequest, error) {
	var req renewRequest
	data, err := io.ReadAll(body)
	if err != nil {
		return req, errors.New("the body could not be read")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return req, nil
	}
	return req, decodeStrict(bytes.NewReader(data), &req, "proofOfWork")
}
