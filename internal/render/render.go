// Package render renders a Challenge at the Helm seam: the value translator
// of helm-operator-plugins. A render is a pipeline of steps that one list
// names in order (Translator.steps): the Challenge's template is read; its
// values are composed and checked against the admin's rules, reading
// nothing (values.Rules.Check); admission judges it (internal/admission);
// then comes the one read of what its values take from the cluster (read:
// the organiser's Secrets through their one trust check, shared Services,
// Gateways, a pooled instance's claimant), and the pure render with what was
// read (values.Rules.Render), which gives the chart values and the policy
// gate's expectation together. Package values holds everything after the
// reads, and reads nothing.
package render

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/chartutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/admission"
	"github.com/challenge-operator/challenge-operator/internal/helmobject"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
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
	// Rules are the admin's, which every render is held to.
	values.Rules
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
func (t Translator) Render(ctx context.Context, u *unstructured.Unstructured) (values.Rendered, error) {
	r, err := t.render(ctx, u)
	var re *lifecycle.ReasonedError
	if errors.As(err, &re) {
		return values.Rendered{}, reconcile.TerminalError(err)
	}
	return r, err
}

// rendering is one render as its steps build it, in order.
type rendering struct {
	object    *unstructured.Unstructured
	challenge *ctfv1alpha1.Challenge
	// template is the Challenge's ChallengeTemplate; nil when it names none.
	template *ctfv1alpha1.ChallengeTemplate
	// checked are its values composed before any read, as checked against
	// limits, the ceilings of its template.
	checked chartutil.Values
	limits  policy.Limits
	// inputs are what its values take from the cluster.
	inputs   values.Inputs
	rendered values.Rendered
}

// steps are a render's steps, in the order they run, each stopping the
// render with its error. Composed and checked before admission, so that a
// claim, and a place in the queue, go only to a Challenge its install
// would admit (its lifetime within the template's maximum, its values
// allowed, the template within the admin's bounds): a refusal is then an
// Error at once, never a wait in the queue that ends in one, nor a claimed
// instance the install would have refused. Only an admitted Challenge reads
// the organiser's Secrets.
func (t Translator) steps() []func(context.Context, *rendering) error {
	return []func(context.Context, *rendering) error{
		decode,         // the Challenge as the Helm reconciler hands it over
		t.readTemplate, // its ChallengeTemplate, from the cache
		t.served,       // a Challenge served by a pooled instance it claimed stops here
		t.check,        // its values composed and checked, reading nothing
		t.admit,        // admission: quota, budget, pool claim, hold, queue
		t.read,         // the one read of what its values take from the cluster
		t.renderValues, // its values and the gate's expectation, from what was read
	}
}

// render runs the steps.
func (t Translator) render(ctx context.Context, u *unstructured.Unstructured) (values.Rendered, error) {
	r := &rendering{object: u}
	for _, step := range t.steps() {
		if err := step(ctx, r); err != nil {
			return values.Rendered{}, err
		}
	}
	return r.rendered, nil
}

func decode(_ context.Context, r *rendering) (err error) {
	r.challenge, err = helmobject.Challenge(r.object)
	return err
}

// readTemplate reads the Challenge's ChallengeTemplate, when it names one.
func (t Translator) readTemplate(ctx context.Context, r *rendering) error {
	name := r.challenge.Spec.Template
	if name == "" {
		return nil
	}
	tmpl := &ctfv1alpha1.ChallengeTemplate{}
	err := t.Reader.Get(ctx, client.ObjectKey{Name: name}, tmpl)
	if apierrors.IsNotFound(err) {
		return lifecycle.Errorf(lifecycle.ReasonTemplateNotFound, "ChallengeTemplate %q does not exist", name)
	}
	if err != nil {
		return fmt.Errorf("reading ChallengeTemplate %q: %w", name, err)
	}
	r.template = tmpl
	return nil
}

// served stops the render of a Challenge that claimed a pooled instance: it
// is never installed itself.
func (t Translator) served(ctx context.Context, r *rendering) error {
	return t.Admission.Served(ctx, r.challenge)
}

func (t Translator) check(_ context.Context, r *rendering) (err error) {
	r.checked, r.limits, err = t.Check(r.challenge, r.template)
	return err
}

func (t Translator) admit(ctx context.Context, r *rendering) error {
	return t.Admission.Admit(ctx, r.challenge, r.template)
}

func (t Translator) renderValues(_ context.Context, r *rendering) (err error) {
	r.rendered, err = t.Rules.Render(r.challenge, r.template, r.limits, r.inputs)
	return err
}
