package values

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/chartutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/admission"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// Translator is the helm-operator value translator for Challenges.
type Translator struct {
	// Reader reads ChallengeTemplates, Challenges and Gateways, usually the manager's cache.
	Reader client.Reader
	// OrganiserReader reads the organiser's objects, uncached: the Secrets
	// flags come from and the shared Services (the cache holds instances'
	// objects only).
	OrganiserReader client.Reader
	// Admission decides whether a Challenge gets an instance now, once its
	// values composed; its Pools tell which instances are pooled ones a
	// team claimed.
	Admission admission.Admission
	// Settings are enforced on every instance.
	Settings Settings
	// Limits are the operator's ceilings the policy gate holds every
	// release to, unless a template's policy says otherwise.
	Limits policy.Limits
	// FlagCodec makes the teams' perTeam flags under the operator's flag
	// key; nil without one (--flag-key-file), which refuses them.
	FlagCodec *flagtag.Codec
}

// Rendered is one render of a Challenge, from one computation: its chart
// values, and what the policy gate lets the release they render contain.
type Rendered struct {
	Values   chartutil.Values
	Expected policy.Instance
}

// Translate implements values.Translator of helm-operator-plugins.
func (t Translator) Translate(ctx context.Context, u *unstructured.Unstructured) (chartutil.Values, error) {
	r, err := t.Render(ctx, u)
	return r.Values, err
}

// Render composes u's values and what the gate expects of them. A spec
// error (a ReasonedError) is terminal: retrying cannot fix it, and the
// watches on templates, sibling Challenges and the Challenge itself wake the
// reconcile when something that could fix it changes.
func (t Translator) Render(ctx context.Context, u *unstructured.Unstructured) (Rendered, error) {
	r, err := t.render(ctx, u)
	var re *lifecycle.ReasonedError
	if errors.As(err, &re) {
		return Rendered{}, reconcile.TerminalError(err)
	}
	return r, err
}

// render is a pipeline of four steps, in this order: the template is read;
// the values are composed and checked, reading nothing; admission judges the
// Challenge; then the one read of what its values take from the cluster
// (read), and the values composed with it, from which the gate's
// expectation comes. Composed and checked before admission, so that a
// claim, and a place in the queue, go only to a Challenge its install would
// admit (its lifetime within the template's maximum, its values allowed, the
// template within the admin's bounds): a refusal is then an Error at once,
// never a wait in the queue that ends in one, nor a claimed instance the
// install would have refused.
func (t Translator) render(ctx context.Context, u *unstructured.Unstructured) (Rendered, error) {
	var c ctfv1alpha1.Challenge
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
		return Rendered{}, fmt.Errorf("decoding Challenge %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	tmpl, err := t.template(ctx, &c)
	if err != nil {
		return Rendered{}, err
	}
	// A Challenge that claimed a pooled instance is never installed itself.
	if err := t.Admission.Served(ctx, &c); err != nil {
		return Rendered{}, err
	}
	checked, limits, err := t.composeChecked(&c, tmpl)
	if err != nil {
		return Rendered{}, err
	}
	if err := t.Admission.Admit(ctx, &c, tmpl); err != nil {
		return Rendered{}, err
	}
	in, err := t.read(ctx, &c, tmpl, checked)
	if err != nil {
		return Rendered{}, err
	}
	return t.renderWith(&c, tmpl, limits, in)
}

// renderWith composes c's values with what was read for them (in), holds
// them to the size a release record takes, and says what the gate lets
// their release contain: the pure end of a render.
func (t Translator) renderWith(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, limits policy.Limits, in Inputs) (Rendered, error) {
	vals, err := ComposeWith(c, tmpl, t.Settings, in)
	if err != nil {
		return Rendered{}, err
	}
	if err := checkValuesSize(vals); err != nil {
		return Rendered{}, err
	}
	expected, err := expectation(c, tmpl, t.Settings, limits, in.Claimant, in.Shared, vals)
	if err != nil {
		return Rendered{}, err
	}
	return Rendered{Values: vals, Expected: expected}, nil
}

// template reads c's ChallengeTemplate, nil when c names none.
func (t Translator) template(ctx context.Context, c *ctfv1alpha1.Challenge) (*ctfv1alpha1.ChallengeTemplate, error) {
	if c.Spec.Template == "" {
		return nil, nil
	}
	tmpl := &ctfv1alpha1.ChallengeTemplate{}
	err := t.Reader.Get(ctx, client.ObjectKey{Name: c.Spec.Template}, tmpl)
	if apierrors.IsNotFound(err) {
		return nil, lifecycle.Errorf(lifecycle.ReasonTemplateNotFound, "ChallengeTemplate %q does not exist", c.Spec.Template)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ChallengeTemplate %q: %w", c.Spec.Template, err)
	}
	return tmpl, nil
}

// composeChecked composes c's values and holds them to the ceilings of
// tmpl (policy.LimitsFor), which it returns: what a render checks before
// admission, and CheckTemplate for the template alone.
func (t Translator) composeChecked(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) (chartutil.Values, policy.Limits, error) {
	vals, err := Compose(c, tmpl, t.Settings)
	if err != nil {
		return nil, policy.Limits{}, err
	}
	limits, err := policy.LimitsFor(t.Limits, tmpl)
	if err != nil {
		return nil, policy.Limits{}, err
	}
	if err := checkDisk(vals, limits.EphemeralStorage); err != nil {
		return nil, policy.Limits{}, err
	}
	if err := checkComponentReplicas(tmpl, limits); err != nil {
		return nil, policy.Limits{}, err
	}
	return vals, limits, nil
}

// CheckTemplate refuses a template its instances could not be installed
// from under the cluster admin's bounds, whoever the team: what a render
// checks before admission that depends on the template alone (its values,
// security, lifetime, exposure, ceilings, the namespaces its flags come
// from and the flag key its perTeam flags need), with the reason naming
// the flag. Nothing is read from the cluster.
func (t Translator) CheckTemplate(tmpl *ctfv1alpha1.ChallengeTemplate) error {
	probe := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "template-check", Namespace: "template-check"},
		Spec: ctfv1alpha1.ChallengeSpec{Template: tmpl.Name, Participant: "template-check"}}
	if _, _, err := t.composeChecked(probe, tmpl); err != nil {
		return err
	}
	if tmpl.Spec.Flag != nil {
		if err := t.Settings.checkFlagSecret(tmpl); err != nil {
			return err
		}
	}
	return t.checkNamedFlags(tmpl)
}
