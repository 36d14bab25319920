package instancer

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestADeletedInstanceIsNotReady: between a Stop and the operator's Deleted
// status, the status still says Running; the team was shown phase Deleted
// with reason Ready, "the instance is ready at ..." and where to connect.
func TestADeletedInstanceIsNotReady(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	ch := &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: "web-team-a", DeletionTimestamp: &now},
		Spec:       ctfv1alpha1.ChallengeSpec{Template: "web", Participant: "team-a"},
		Status: ctfv1alpha1.ChallengeStatus{Phase: ctfv1alpha1.PhaseRunning, Reason: "Ready", Message: "the instance is ready at 10.0.0.1:80",
			Endpoint: &ctfv1alpha1.Endpoint{Host: "10.0.0.1", Port: 80, URL: "http://10.0.0.1/"}},
	}
	v := instanceView(ch, nil)
	g.Expect(v.Phase).To(Equal("Deleted"))
	g.Expect(v.Reason).To(Equal("Uninstalling"))
	g.Expect(v.Message).To(Equal("the instance is being removed"))
	g.Expect(v.Connect).To(BeEmpty(), "nobody is told to connect to an instance being removed")

	ch.DeletionTimestamp = nil
	v = instanceView(ch, nil)
	g.Expect(v.Phase).To(Equal("Running"))
	g.Expect(v.Connect).To(Equal("http://10.0.0.1/"))
}
