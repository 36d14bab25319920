// Package builders makes the ChallengeTemplates and Challenges that tests of
// every package start from, instead of a local newTemplate per file.
//
// A suite then says only what its test is about (a pool, a flag, a
// participant), and a new required field of the API is filled in here once,
// as kueue's pkg/util/testing wrappers do.
//
// A template's builders take edits of its spec, the organiser's choices the
// tests vary, as harness.Template and harness.EditTemplate do; a Challenge's
// take edits of the whole object, since its tests vary what the platform and
// the operator wrote on it too (labels, UID, creation time, status). Nil
// edits are skipped, so a table's missing edit needs no guard.
//
// It imports the API and apimachinery only: a test of any package but
// api/v1alpha1's own may use it without a cycle.
package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TemplateEdit changes a template's spec as a test needs it.
type TemplateEdit = func(*ctfv1alpha1.ChallengeTemplateSpec)

// ChallengeEdit changes a Challenge as a test needs it.
type ChallengeEdit = func(*ctfv1alpha1.Challenge)

// Template returns the smallest ChallengeTemplate the API server admits and
// the chart renders, called name: the image registry.example/ctf/<name>:1
// (one image per template, so that a test reading a rendered Deployment
// knows whose it is) and one port, nc 1337; then each edit in order.
func Template(name string, edits ...TemplateEdit) *ctfv1alpha1.ChallengeTemplate {
	return BareTemplate(name, append([]TemplateEdit{func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Image = "registry.example/ctf/" + name + ":1"
		s.Ports = []ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1337}}
	}}, edits...)...)
}

// BareTemplate returns a ChallengeTemplate with a name and only what edits
// set: no image, no port. It is the template of unit tests of code that
// reads a few of its fields (admission's limits, a pool's size), where a
// field the test does not name must stay unset; the API server refuses it.
func BareTemplate(name string, edits ...TemplateEdit) *ctfv1alpha1.ChallengeTemplate {
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, edit := range edits {
		if edit != nil {
			edit(&tmpl.Spec)
		}
	}
	return tmpl
}

// Challenge returns participant's Challenge ns/name without a template, valid
// as it is: the image registry.example/ctf/web-intro:1.0 and one port, http
// 8080; then each edit in order.
func Challenge(ns, name, participant string, edits ...ChallengeEdit) *ctfv1alpha1.Challenge {
	return edited(&ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ctfv1alpha1.ChallengeSpec{
			Participant: participant,
			Image:       "registry.example/ctf/web-intro:1.0",
			Ports:       []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}},
		},
	}, edits)
}

// FromTemplate returns participant's Challenge ns/name of template, as a
// platform creates it (an empty participant is left empty, as a pooled
// instance's is); then each edit in order.
func FromTemplate(ns, name, participant, template string, edits ...ChallengeEdit) *ctfv1alpha1.Challenge {
	return edited(&ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       ctfv1alpha1.ChallengeSpec{Participant: participant, Template: template},
	}, edits)
}

// UID sets the Challenge's UID, as the API server would have: code that
// tells instances apart by it (claims, owners, budgets) needs one in a unit
// test.
func UID(uid string) ChallengeEdit {
	return func(c *ctfv1alpha1.Challenge) { c.UID = types.UID(uid) }
}

// Created sets when the API server created the Challenge: the order of
// admission queues and pools is by it.
func Created(at time.Time) ChallengeEdit {
	return func(c *ctfv1alpha1.Challenge) { c.CreationTimestamp = metav1.NewTime(at) }
}

// Labelled adds the label key=value, as a platform or the operator sets it.
func Labelled(key, value string) ChallengeEdit {
	return func(c *ctfv1alpha1.Challenge) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[key] = value
	}
}

// Annotated adds the annotation key=value, as the operator writes one (a
// pooled instance's template generation, its claimant).
func Annotated(key, value string) ChallengeEdit {
	return func(c *ctfv1alpha1.Challenge) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[key] = value
	}
}

// edited applies the edits that are not nil to c in order.
func edited(c *ctfv1alpha1.Challenge, edits []ChallengeEdit) *ctfv1alpha1.Challenge {
	for _, edit := range edits {
		if edit != nil {
			edit(c)
		}
	}
	return c
}
