package harness

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// EventuallyMayCreateChallenges waits until c, a client of a subject just
// bound to a role, may create Challenges in namespace: the authorizer reads
// bindings from its cache, a moment after they are written.
func EventuallyMayCreateChallenges(t *testing.T, c client.Client, namespace string) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create",
				Group: ctfv1alpha1.GroupVersion.Group, Resource: "challenges"}}}
		g.Expect(c.Create(context.Background(), review)).To(gomega.Succeed())
		g.Expect(review.Status.Allowed).To(gomega.BeTrue())
	}, Timeout, Interval).Should(gomega.Succeed())
}
