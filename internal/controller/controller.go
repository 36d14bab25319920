// Package controller holds what the operator's controllers share across
// the kinds they reconcile: how a Challenge is found from its template or
// from an object of its instance, the server-side apply of a status, and
// the settling of a template's reconciles. The controllers themselves are
// in a subpackage per kind: challenge (a Challenge: its Helm seam, status,
// expiry, teardown), challengepool (the warm pools and their pooled
// Challenges) and challengetemplate (a ChallengeTemplate's status).
package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TemplateField indexes Challenges by spec.template in the manager's cache.
const TemplateField = "spec.template"

// ChallengeOfInstanceObject maps an object of an instance to its Challenge.
func ChallengeOfInstanceObject(_ context.Context, obj client.Object) []reconcile.Request {
	labels := obj.GetLabels()
	name, ok := labels[ctfv1alpha1.InstanceLabel]
	if !ok {
		return nil
	}
	ns := labels[ctfv1alpha1.InstanceNamespaceLabel]
	if ns == "" {
		ns = obj.GetNamespace()
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
