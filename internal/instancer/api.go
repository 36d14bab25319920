package instancer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// Labels the instancer sets on the Challenges it creates, so that organisers
// can tell them from the platform's.
const (
	ParticipantLabel = "ctf.challenge-operator.io/participant"
	CreatedByLabel   = "ctf.challenge-operator.io/created-by"
	createdBy        = "instancer"
)

// maxNameLength is the longest Challenge name: it is also the Helm release's.
const maxNameLength = 53

// InstanceName is the one name a team's instance of a template has, so that
// a reload or a double click never makes a second one. It reads as
// "<template>-<team>" (cut to fit) and ends in a hash of the pair, so that
// no two pairs share a name: "a" of team "b-c" and "a-b" of team "c" once did,
// and one team's start was refused because of the other's instance.
func InstanceName(template, team string) string {
	sum := sha256.Sum256([]byte(template + "\x00" + team))
	suffix := "-" + hex.EncodeToString(sum[:])[:instanceHashLength]
	readable := strings.TrimRight(truncate(template+"-"+team, maxNameLength-len(suffix)), "-")
	return readable + suffix
}

// instanceHashLength is how many hex digits of the hash end an instance name.
const instanceHashLength = 10

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
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
	ch, apiErr := s.own(r.Context(), s.live.reader(s.Client, team), t.Name, team)
	if apiErr != nil {
		return nil, nil, apiErr
	}
	return t, ch, nil
}

// own returns team's instance of template, or errNotFound. A Challenge of
// that name that belongs to another team or template is not found either:
// a team never learns of, nor touches, another's. Reads that only show the
// instance use the cache (s.Client); reads before acting on it use s.live's.
func (s *Server) own(ctx context.Context, r client.Reader, template, team string) (*ctfv1alpha1.Challenge, *apiError) {
	ch := &ctfv1alpha1.Challenge{}
	err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: InstanceName(template, team)}, ch)
	switch {
	case apierrors.IsNotFound(err):
		return nil, errNotFound
	case err != nil:
		return nil, s.internal(ctx, err)
	case ch.Spec.Participant != team || ch.Spec.Template != template:
		return nil, errNotFound
	}
	return ch, nil
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
	ch, apiErr := s.own(r.Context(), s.Client, t.Name, team)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	writeJSON(w, http.StatusOK, instanceView(ch, t))
}

type startRequest struct {
	Template string `json:"template"`
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
	if err := decodeStrict(r.Body, &req, "template"); err != nil {
		writeError(w, errBadRequest(`Send {"template": "<name>"}: `+err.Error()+"."))
		return
	}
	t, apiErr := s.startable(ctx, req.Template)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	name := InstanceName(t.Name, team)
	// A start that finds the instance returns it: a reload or a double
	// click costs no start and makes no duplicate.
	if ch, apiErr := s.own(ctx, s.live.reader(s.Client, team), t.Name, team); apiErr == nil {
		if ch.DeletionTimestamp != nil {
			writeError(w, &apiError{Status: http.StatusConflict, Code: "stopping", Message: "Your previous instance is still stopping; start again in a moment."})
			return
		}
		writeJSON(w, http.StatusOK, instanceView(ch, t))
		return
	} else if apiErr != errNotFound {
		writeError(w, apiErr)
		return
	}
	if refusal, err := s.limits.admitStart(ctx, team, t.Name, s.now()); s.refused(ctx, w, refusal, err) {
		return
	}
	ch := &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace,
			Labels: map[string]string{ParticipantLabel: team, CreatedByLabel: createdBy}},
		Spec: ctfv1alpha1.ChallengeSpec{Template: t.Name, Participant: team},
	}
	err := s.Client.Create(ctx, ch)
	switch {
	case apierrors.IsAlreadyExists(err):
		// Another request of the team won the race; else a Challenge made
		// by other means has the name, which no team's instance shares. The
		// team learns nothing about it; the log tells the organisers.
		if ch, apiErr := s.own(ctx, s.live.reader(s.Client, team), t.Name, team); apiErr == nil {
			writeJSON(w, http.StatusOK, instanceView(ch, t))
			return
		}
		logf.FromContext(ctx).Error(err, "a Challenge not made for this team has its instance's name", "name", name, "team", team, "template", t.Name)
		writeError(w, &apiError{Status: http.StatusConflict, Code: "unavailable", Message: "This instance cannot be started; the organisers have been told."})
		return
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		// The operator's admission (quota, policy) refused it.
		writeError(w, &apiError{Status: http.StatusConflict, Code: "refused", Message: admissionMessage(err)})
		return
	case err != nil:
		writeError(w, s.internal(ctx, err))
		return
	}
	writeJSON(w, http.StatusCreated, instanceView(ch, t))
}

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
// sentence, the quota's when that is the reason.
func admissionMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && strings.Contains(status.Status().Message, lifecycle.ReasonQuotaExceeded) {
		return participantMessage(ctfv1alpha1.PhaseError, lifecycle.ReasonQuotaExceeded)
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
	// The cooldown is recorded first: a replica killed between the two
	// never leaves a stop without one.
	if err := s.limits.stoppedAt(ctx, team, t.Name, s.now()); err != nil {
		writeError(w, s.internal(ctx, err))
		return
	}
	// Delete exactly the instance read, not a successor of the same name.
	if err := s.Client.Delete(ctx, ch, client.Preconditions{UID: &ch.UID}); err != nil && !apierrors.IsNotFound(err) {
		writeError(w, s.internal(ctx, err))
		return
	}
	// Answer with the instance as the delete left it: on its way out, in
	// the words and without the connect string of a deleted one.
	deleted := metav1.Now()
	ch.DeletionTimestamp = &deleted
	writeJSON(w, http.StatusAccepted, instanceView(ch, t))
}

func (s *Server) renewInstance(w http.ResponseWriter, r *http.Request, team string) {
	ctx := r.Context()
	t, ch, apiErr := s.instanceOf(r, team)
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
