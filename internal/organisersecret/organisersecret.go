// Package organisersecret decides whether a ChallengeTemplate may read a
// Secret of the organiser's, and reads it only then. It is the one trust
// check behind every read of a Secret a template names (its flag, named
// flags, secretEnv, secret files), whoever reads it: the render, the static
// flags' digests, the solver check. Two tiers, both always: the cluster
// admin bounds the namespaces (--flag-secret-namespaces), and within them
// only Secrets marked as the organiser's are read.
package organisersecret

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// Namespaces are those the cluster admin lets templates read Secrets from
// (--flag-secret-namespaces): outside them, whoever writes a template could
// copy any Secret of the cluster into an instance.
type Namespaces []string

// Allow refuses tmpl reading what (its flag, a secretEnv value, a secret
// file) from namespace unless n lists it. It reads nothing, so that a
// template can be judged before anything of it is read.
func (n Namespaces) Allow(tmpl *ctfv1alpha1.ChallengeTemplate, what, namespace string) error {
	if slices.Contains(n, namespace) {
		return nil
	}
	return lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "flag-secret: ChallengeTemplate %s reads %s from namespace %q; allowed: %s",
		tmpl.Name, what, namespace, n.describe())
}

func (n Namespaces) describe() string {
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// Reader reads the Secrets templates name, only those they may read: the
// only way into an organiser's Secret, so no reader can skip half the check.
type Reader struct {
	// Client reads the Secrets, uncached: the operator's cache holds no
	// organiser's Secret.
	Client client.Reader
	// Namespaces bound where they are read from.
	Namespaces Namespaces
}

// Read returns the value of ref's key for tmpl, which reads it as what:
// from a namespace the admin allows, from a Secret marked as the
// organiser's, never empty. An error names the Secret and key, never a value.
func (r Reader) Read(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, what string, ref *ctfv1alpha1.SecretKeyRef) ([]byte, error) {
	if err := r.Namespaces.Allow(tmpl, what, ref.Namespace); err != nil {
		return nil, err
	}
	var s corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return nil, fmt.Errorf("reading flag Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if problem := notOrganisers(&s); problem != "" {
		return nil, lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "flag-secret: Secret %s/%s %s; a template reads only Secrets labelled %s=true",
			ref.Namespace, ref.Name, problem, ctfv1alpha1.OrganiserSecretLabel)
	}
	v, ok := s.Data[ref.Key]
	if !ok || len(v) == 0 {
		return nil, fmt.Errorf("flag Secret %s/%s has no key %q", ref.Namespace, ref.Name, ref.Key)
	}
	return v, nil
}

// notOrganisers says why a template may not read s, "" when it may. The
// namespace is the admin's bound; within it only Secrets marked as the
// organiser's are read, never one of an instance (its flag Secret holds a
// team's flag) nor one of a type that carries a credential of the cluster
// (a ServiceAccount token, a TLS key, a registry login, a Helm release).
func notOrganisers(s *corev1.Secret) string {
	switch {
	case s.Labels[ctfv1alpha1.OrganiserSecretLabel] != "true":
		return "is not marked as the organiser's"
	case s.Type != "" && s.Type != corev1.SecretTypeOpaque:
		return fmt.Sprintf("is of type %s, not Opaque", s.Type)
	case s.Labels[ctfv1alpha1.InstanceLabel] != "" || ownedByChallenge(s):
		return "belongs to an instance"
	}
	return ""
}

func ownedByChallenge(s *corev1.Secret) bool {
	for _, o := range s.OwnerReferences {
		if o.Kind == "Challenge" && strings.HasPrefix(o.APIVersion, ctfv1alpha1.GroupVersion.Group+"/") {
			return true
		}
	}
	return false
}
