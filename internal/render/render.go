// Package render renders a Challenge at the Helm seam: the value translator
// of helm-operator-plugins. A render is a pipeline of four steps, in this
// order: the Challenge's template is read; its values are composed and
// checked against the admin's rules, reading nothing (values.Rules.Check);
// admission judges it (internal/admission); then the one read of what its
// values take from the cluster (read: the organiser's Secrets through their
// one trust check, shared Services, Gateways, a pooled instance's
// claimant), and the pure render with what was read (values.Rules.Render),
// which gives the chart values and the policy gate's expectation together.
// Package values holds everything after the reads, and reads nothing.
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

// render runs the pipeline. Composed and checked before admission, so that
// a claim, and a place in the queue, go only to a Challenge its install
// would admit (its lifetime within the template's maximum, its values
// allowed, the template within the admin's bounds): a refusal is then an
// Error at once, never a wait in the queue that ends in one, nor a claimed
// instance the install would have refused.
func (t Translator) render(ctx context.Context, u *unstructured.Unstructured) (values.Rendered, error) {
	c, err := helmobject.Challenge(u)
	if err != nil {
		return values.Rendered{}, err
	}
	tmpl, err := t.template(ctx, c)
	if err != nil {
		return values.Rendered{}, err
	}
	// A Challenge that claimed a pooled instance is never installed itself.
	if err := t.Admission.Served(ctx, c); err != nil {
		return values.Rendered{}, err
	}
	checked, limits, err := t.Check(c, tmpl)
	if err != nil {
		return values.Rendered{}, err
	}
	if err := t.Admission.Admit(ctx, c, tmpl); err != nil {
		return values.Rendered{}, err
	}
	in, err := t.read(ctx, c, tmpl, checked)
	if err != nil {
		return values.Rendered{}, err
	}
	return t.Rules.Render(c, tmpl, limits, in)
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
