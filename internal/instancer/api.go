package instancer

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

// createdBy is the instancer's value of ctfv1alpha1.CreatedByLabel on the
// Challenges it creates, so that organisers can tell them from the
// platform's.
const createdBy = "instancer"

// maxNameLength is the longest Challenge name: it is also the Helm release's.
const maxNameLength = 53

// nameHashLength is how many hex digits of a keyed MAC end an instance
// name: 64 bits, which nobody without the key can search for collisions.
const nameHashLength = 16

// maxNameAttempts is how many names a start tries when each is held by a
// Challenge not of the team's: one in 2^64 per name, unless planted.
const maxNameAttempts = 4

// nameKeyLabel makes the name key from a token key: no other use of that
// key yields the same bytes.
const nameKeyLabel = "challenge-operator instancer: instance names v1"

// NameKey is the key instance names are computed with: derived from the
// token key of the lowest key id, so that no team can compute another's
// name (nor a pair of team ids whose names collide) from public values.
// A rotation that removes that key changes the names new instances get;
// instances are found by their labels, never by their name alone, so none
// is lost. Nil without keys (every token is refused then).
func NameKey(keys token.Keys) []byte {
	ids := slices.Sorted(maps.Keys(keys))
	if len(ids) == 0 {
		return nil
	}
	mac := hmac.New(sha256.New, keys[ids[0]])
	mac.Write([]byte(nameKeyLabel))
	return mac.Sum(nil)
}

// InstanceName is the name a team's instance of a template is created
// under, so that a reload or a double click never makes a second one. It
// reads as "<template>-<team>" (runs of "-" made one, since "--" separates
// an instance's name from its components'; cut to fit) and ends in a MAC of
// the pair keyed with key (NameKey).
func InstanceName(key []byte, template, team string) string {
	return instanceName(key, template, team, 0)
}

// instanceName is InstanceName's attempt-th candidate: a start whose name is
// held by a Challenge not of the team's tries the next.
func instanceName(key []byte, template, team string, attempt int) string {
	mac := hmac.New(sha256.New, key)
	_, _ = fmt.Fprintf(mac, "%s\x00%s\x00%d", template, team, attempt) // a hash.Hash never fails a write
	suffix := "-" + hex.EncodeToString(mac.Sum(nil))[:nameHashLength]
	readable := collapseDashes(template + "-" + team)
	readable = strings.TrimRight(truncate(readable, maxNameLength-len(suffix)), "-")
	return readable + suffix
}

// collapseDashes makes every run of "-" in s one.
func collapseDashes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '-' && i > 0 && s[i-1] == '-' {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// belongs tells whether ch is the instancer's instance of template for team:
// created by an instancer, labelled for the team, and naming both in its
// spec. Nothing else is ever shown to, renewed or stopped for a team.
func belongs(ch *ctfv1alpha1.Challenge, template, team string) bool {
	return ch.Labels[ctfv1alpha1.CreatedByLabel] == createdBy && ch.Labels[ctfv1alpha1.ParticipantLabel] == team &&
		ch.Spec.Participant == team && ch.Spec.Template == template
}

// nameKey is the name key of the token keys in force.
func (s *Server) nameKey() []byte {
	keys, _ := s.creds.get(s.now())
	return NameKey(keys)
}

// startable returns the template if teams may start it.
func (s *Server) startable(ctx context.Context, name string) (*ctfv1alpha1.ChallengeTemplate, *apiError) {
	t := &ctfv1alpha1.ChallengeTemplate{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errNotStartable(name)
		}
		return nil, s.internal(ctx, err)
	}
	if !isStartable(t) {
		return nil, errNotStartable(name)
	}
	return t, nil
}

func isStartable(t *ctfv1alpha1.ChallengeTemplate) bool {
	return t.Spec.Instancer != nil && t.Spec.Instancer.Startable
}

// startableTemplates lists the templates teams may start.
func (s *Server) startableTemplates(ctx context.Context) ([]*ctfv1alpha1.ChallengeTemplate, *apiError) {
	list := &ctfv1alpha1.ChallengeTemplateList{}
	if err := s.Client.List(ctx, list); err != nil {
		return nil, s.internal(ctx, err)
	}
	var out []*ctfv1alpha1.ChallengeTemplate
	for i := range list.Items {
		if isStartable(&list.Items[i]) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// instanceOf returns the startable template a request's path names and the
// team's instance of it, read fresh: the request acts on it.
func (s *Server) instanceOf(r *http.Request, team string) (*ctfv1alpha1.ChallengeTemplate, *ctfv1alpha1.Challenge, *apiError) {
	t, apiErr := s.startable(r.Context(), r.PathValue("template"))
	if apiErr != nil {
		return nil, nil, apiErr
	}
	if t.Spec.IsShared() {
		return nil, nil, errShared
	}
	ch, apiErr := s.own(r.Context(), s.live.reader(s.Client, team), t.Name, team)
	if apiErr != nil {
		return nil, nil, apiErr
	}
	return t, ch, nil
}

// own returns team's instance of template, or errNotFound. It is found by
// its labels, whatever its name (an older instancer's names, a rotated name
// key, a name another team's instance held), then, if r's cache has not
// seen it yet, under its name through r. A Challenge that does not belong
// to the team is never returned: a team never learns of, nor touches,
// another's. Reads that only show the instance pass the cache (s.Client);
// reads before acting on it, s.live's reader.
func (s *Server) own(ctx context.Context, r client.Reader, template, team string) (*ctfv1alpha1.Challenge, *apiError) {
	list := &ctfv1alpha1.ChallengeList{}
	if err := r.List(ctx, list, client.InNamespace(s.Namespace),
		client.MatchingLabels{ctfv1alpha1.ParticipantLabel: team, ctfv1alpha1.CreatedByLabel: createdBy}); err != nil {
		return nil, s.internal(ctx, err)
	}
	if ch := pick(list.Items, template, team); ch != nil {
		return ch, nil
	}
	ch := &ctfv1alpha1.Challenge{}
	err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: InstanceName(s.nameKey(), template, team)}, ch)
	switch {
	case apierrors.IsNotFound(err):
		return nil, errNotFound
	case err != nil:
		return nil, s.internal(ctx, err)
	case !belongs(ch, template, team):
		return nil, errNotFound
	}
	return ch, nil
}

// pick returns team's instance of template among chs: the one not being
// deleted, else the newest. Two exist only for a moment (a stopped one
// still going when the next starts under a new name).
func pick(chs []ctfv1alpha1.Challenge, template, team string) *ctfv1alpha1.Challenge {
	var best *ctfv1alpha1.Challenge
	for i := range chs {
		ch := &chs[i]
		if !belongs(ch, template, team) {
			continue
		}
		if best == nil || better(ch, best) {
			best = ch
		}
	}
	return best
}

// better orders two instances of one team and template: live before
// deleting, then newer, then by name (a stable choice).
func better(a, b *ctfv1alpha1.Challenge) bool {
	if (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) {
		return a.DeletionTimestamp == nil
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name < b.Name
}

func (s *Server) internal(ctx context.Context, err error) *apiError {
	logf.FromContext(ctx).Error(err, "instancer request failed")
	return errInternal
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request, _ string) {
	templates, apiErr := s.startableTemplates(r.Context())
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	out := []Template{}
	for _, t := range templates {
		out = append(out, templateView(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"templates": out})
}

func (s *Server) listInstances(w http.ResponseWriter, r *http.Request, team string) {
	templates, apiErr := s.startableTemplates(r.Context())
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	out := []Instance{}
	for _, t := range templates {
		if t.Spec.IsShared() {
			if ch, apiErr := s.sharedInstance(r.Context(), t); apiErr == nil {
				out = append(out, sharedView(ch))
			}
			continue
		}
		ch, apiErr := s.own(r.Context(), s.Client, t.Name, team)
		if apiErr == errNotFound {
			continue
		}
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		out = append(out, instanceView(ch, t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"instances": out})
}

func (s *Server) getInstance(w http.ResponseWriter, r *http.Request, team string) {
	t, apiErr := s.startable(r.Context(), r.PathValue("template"))
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if t.Spec.IsShared() {
		ch, apiErr := s.sharedInstance(r.Context(), t)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		writeJSON(w, http.StatusOK, sharedView(ch))
		return
	}
	ch, apiErr := s.own(r.Context(), s.Client, t.Name, team)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	writeJSON(w, http.StatusOK, instanceView(ch, t))
}

type startRequest struct {
	Template string `json:"template"`
	// ProofOfWork is the solution of a start challenge, when the template
	// asks for one.
	ProofOfWork string `json:"proofOfWork"`
}

// decodeStrict decodes one JSON object whose keys are exactly among keys,
// each at most once: encoding/json alone matches keys in any case and lets
// the last of duplicates win, so two parsers (a proxy's, ours) could read one
// body differently.
func decodeStrict(body io.Reader, v any, keys ...string) error {
	data, err := io.ReadAll(body)
	if err != nil {
		return errors.New("the body could not be read")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("the body is not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errors.New("the body is not valid JSON")
		}
		key, _ := tok.(string)
		switch {
		case !slices.Contains(keys, key):
			return fmt.Errorf("unknown key %q", key)
		case seen[key]:
			return fmt.Errorf("key %q given twice", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return errors.New("the body is not valid JSON")
		}
	}
	if _, err := dec.Token(); err != nil {
		return errors.New("the body is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("the body has more than one JSON value")
	}
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	if err := strict.Decode(v); err != nil {
		return errors.New("a value has the wrong type")
	}
	return nil
}

func (s *Server) startInstance(w http.ResponseWriter, r *http.Request, team string) {
	ctx := r.Context()
	var req startRequest
	if err := decodeStrict(r.Body, &req, "template", "proofOfWork"); err != nil {
		writeError(w, errBadRequest(`Send {"template": "<name>"}: `+err.Error()+"."))
		return
	}
	// The proof of work comes first, even before a reload finds the
	// instance: every start of the template costs one.
	t, apiErr := s.actionable(ctx, req.Template, team, actionStart, req.ProofOfWork)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	// A start that finds the instance returns it: a reload or a double
	// click costs no start and makes no duplicate. The cache is asked
	// first, then the refusals this replica knows of: neither costs a
	// request; then the API server, for what the cache has not seen yet.
	if s.answeredExisting(ctx, w, s.Client, t, team) {
		return
	}
	if refusal := s.limits.refusesStart(team, t.Name, s.now()); refusal != nil {
		writeError(w, refusal)
		return
	}
	if s.answeredExisting(ctx, w, s.live.reader(s.Client, team), t, team) {
		return
	}
	if refusal, err := s.limits.admitStart(ctx, team, t.Name, s.now()); s.refused(ctx, w, refusal, err) {
		return
	}
	s.create(ctx, w, t, team)
}

// answeredExisting answers a start with team's instance of t when r finds
// one, and tells whether it did.
func (s *Server) answeredExisting(ctx context.Context, w http.ResponseWriter, r client.Reader, t *ctfv1alpha1.ChallengeTemplate, team string) bool {
	ch, apiErr := s.own(ctx, r, t.Name, team)
	switch {
	case apiErr == errNotFound:
		return false
	case apiErr != nil:
		writeError(w, apiErr)
	default:
		answerFound(w, ch, t)
	}
	return true
}

// answerFound answers a start that found the team's instance ch: itself, or
// that it is still stopping.
func answerFound(w http.ResponseWriter, ch *ctfv1alpha1.Challenge, t *ctfv1alpha1.ChallengeTemplate) {
	if ch.DeletionTimestamp != nil {
		writeError(w, errStopping)
		return
	}
	writeJSON(w, http.StatusOK, instanceView(ch, t))
}

// create makes team's instance of t under the first of its names no other
// Challenge holds: a name held by another team's (or anything not the
// instancer's) is never served, stopped nor renewed for this team, and
// never blocks it either.
func (s *Server) create(ctx context.Context, w http.ResponseWriter, t *ctfv1alpha1.ChallengeTemplate, team string) {
	key := s.nameKey()
	for attempt := range maxNameAttempts {
		ch := &ctfv1alpha1.Challenge{
			ObjectMeta: metav1.ObjectMeta{Name: instanceName(key, t.Name, team, attempt), Namespace: s.Namespace,
				Labels: map[string]string{ctfv1alpha1.ParticipantLabel: team, ctfv1alpha1.CreatedByLabel: createdBy}},
			Spec: ctfv1alpha1.ChallengeSpec{Template: t.Name, Participant: team},
		}
		err := s.Client.Create(ctx, ch)
		switch {
		case err == nil:
			writeJSON(w, http.StatusCreated, instanceView(ch, t))
			return
		case apierrors.IsAlreadyExists(err):
			// Another request of the team's won the race: its instance is
			// the answer. Else the name is another's: try the next.
			held := &ctfv1alpha1.Challenge{}
			if err := s.liveReader().Get(ctx, client.ObjectKeyFromObject(ch), held); apierrors.IsNotFound(err) {
				continue // gone meanwhile; the next name is as good
			} else if err != nil {
				writeError(w, s.internal(ctx, err))
				return
			}
			if belongs(held, t.Name, team) {
				answerFound(w, held, t)
				return
			}
			s.nameHeld(ctx, held, t.Name, team)
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			// The operator's admission (quota, policy) refused it.
			writeError(w, &apiError{Status: http.StatusConflict, Code: "refused", Message: admissionMessage(err)})
			return
		default:
			writeError(w, s.internal(ctx, err))
			return
		}
	}
	writeError(w, &apiError{Status: http.StatusConflict, Code: "unavailable", Message: "This instance cannot be started; the organisers have been told."})
}

// nameHeld reports a name of team's instance held by a Challenge not of the
// team's: to the organisers (the log and a counter), never to the team.
func (s *Server) nameHeld(ctx context.Context, held *ctfv1alpha1.Challenge, template, team string) {
	nameConflicts.Inc()
	logf.FromContext(ctx).Error(errors.New("instance name held by another Challenge"),
		"a Challenge not made for this team holds its instance's name; trying the next name",
		"name", held.Name, "team", team, "template", template,
		"holderParticipant", held.Spec.Participant, "holderTemplate", held.Spec.Template, "holderCreatedBy", held.Labels[ctfv1alpha1.CreatedByLabel])
}

// liveReader reads from the API server, unbudgeted: only for what a write
// just found (a create's name already taken) or must not repeat (a solve's
// stop).
func (s *Server) liveReader() client.Reader {
	if s.APIReader != nil {
		return s.APIReader
	}
	return s.Client
}

// errStopping answers a start while the team's previous instance is still
// being deleted.
var errStopping = &apiError{Status: http.StatusConflict, Code: "stopping", Message: "Your previous instance is still stopping; start again in a moment."}

// refused answers a brake's refusal, or its failure, and tells whether the
// request ends here.
func (s *Server) refused(ctx context.Context, w http.ResponseWriter, refusal *apiError, err error) bool {
	switch {
	case err != nil:
		writeError(w, s.internal(ctx, err))
	case refusal != nil:
		writeError(w, refusal)
	default:
		return false
	}
	return true
}

// admissionMessage is what a team reads when the API server refuses its
// instance: the operator's webhook words its refusals for organisers (they
// name the team's other instances and quotas), so a team gets a fixed
// sentence, the quota's or the budget's when that is the reason.
func admissionMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		for _, reason := range []string{lifecycle.ReasonQuotaExceeded, lifecycle.ReasonBudgetExceeded} {
			if strings.Contains(status.Status().Message, reason) {
				return participantMessage(ctfv1alpha1.PhaseError, reason)
			}
		}
	}
	return "The instance was refused; the organisers have been told."
}

func (s *Server) stopInstance(w http.ResponseWriter, r *http.Request, team string) {
	ctx := r.Context()
	t, ch, apiErr := s.instanceOf(r, team)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if ch.DeletionTimestamp != nil {
		// Stopped already: the cooldown runs from that stop, and another
		// delete changes nothing (each cost a Lease write and a delete).
		writeJSON(w, http.StatusAccepted, instanceView(ch, t))
		return
	}
	if apiErr := s.stop(ctx, t, ch, team); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	// Answer with the instance as the delete left it: on its way out, in
	// the words and without the connect string of a deleted one.
	deleted := metav1.Now()
	ch.DeletionTimestamp = &deleted
	writeJSON(w, http.StatusAccepted, instanceView(ch, t))
}

// stop stops team's instance ch of t, as the team asked. A stop on solve
// (solve) records its cooldown in the same write of the team's record as
// the solve itself, then deletes the instance as this does.
func (s *Server) stop(ctx context.Context, t *ctfv1alpha1.ChallengeTemplate, ch *ctfv1alpha1.Challenge, team string) *apiError {
	// The cooldown is recorded first: a replica killed between the two
	// never leaves a stop without one. An instance that failed before it
	// ever served costs none: the team had nothing of it, and clears it to
	// start again at once.
	if !failedUnserved(ch) {
		if err := s.limits.stoppedAt(ctx, team, t.Name, s.now()); err != nil {
			return s.internal(ctx, err)
		}
	}
	// Delete exactly the instance read, not a successor of the same name.
	if err := s.Client.Delete(ctx, ch, client.Preconditions{UID: &ch.UID}); err != nil && !apierrors.IsNotFound(err) {
		return s.internal(ctx, err)
	}
	return nil
}

// failedUnserved tells whether ch is in Error and was never ready: an
// instance that never served its team (its flags never delivered, its
// policy refused, its workloads failed from the start).
func failedUnserved(ch *ctfv1alpha1.Challenge) bool {
	return ch.Status.Phase == ctfv1alpha1.PhaseError && ch.Status.ReadyAt == nil
}

// actionable is the template named name when team may take action on its
// instance: startable, not shared, and proven (its proof of work, when the
// template asks for one), all from the cache and memory.
func (s *Server) actionable(ctx context.Context, name, team, action, proof string) (*ctfv1alpha1.ChallengeTemplate, *apiError) {
	t, apiErr := s.startable(ctx, name)
	if apiErr != nil {
		return nil, apiErr
	}
	if t.Spec.IsShared() {
		return nil, errShared
	}
	if apiErr := s.proven(t, team, action, proof); apiErr != nil {
		return nil, apiErr
	}
	return t, nil
}

func (s *Server) renewInstance(w http.ResponseWriter, r *http.Request, team string) {
	ctx := r.Context()
	req, err := decodeRenew(r.Body)
	if err != nil {
		writeError(w, errBadRequest(`Send no body, or {"proofOfWork": "<solution>"}: `+err.Error()+"."))
		return
	}
	// Before the live read of the instance: a refusal costs no request.
	t, apiErr := s.actionable(ctx, r.PathValue("template"), team, actionRenew, req.ProofOfWork)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	ch, apiErr := s.own(ctx, s.live.reader(s.Client, team), t.Name, team)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if ch.DeletionTimestamp != nil {
		writeError(w, errNotFound)
		return
	}
	if view := instanceView(ch, t); view.RenewalsLeft != nil && *view.RenewalsLeft == 0 {
		writeError(w, &apiError{Status: http.StatusConflict, Code: "renewal_limit",
			Message: fmt.Sprintf("This instance cannot be renewed again: the limit of %d renewals is reached.", *t.Spec.Lifetime.MaxRenewals)})
		return
	}
	if refusal, err := s.limits.admitRenew(ctx, team, t.Name, s.now()); s.refused(ctx, w, refusal, err) {
		return
	}
	// The operator counts a renewal per new spec.renewedAt and decides
	// the new expiry; the patch carries only the request.
	patch := client.MergeFrom(ch.DeepCopy())
	now := metav1.NewTime(s.now().UTC().Truncate(1e9))
	ch.Spec.RenewedAt = &now
	if err := s.Client.Patch(ctx, ch, patch); err != nil {
		if apierrors.IsNotFound(err) {
			writeError(w, errNotFound)
			return
		}
		writeError(w, s.internal(ctx, err))
		return
	}
	writeJSON(w, http.StatusOK, instanceView(ch, t))
}
