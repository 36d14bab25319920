package instancer_test

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
)

// TestAFailedInstanceFreesItsTeam: a team whose instance ended in Error
// before it ever served (here the operator refuses its template's
// security) stops it and starts again at once: a failure of the
// instance's own costs no cooldown. A stop of an instance that served
// does (TestCooldownAfterStopAndStartsPerMinute).
func TestAFailedInstanceFreesItsTeam(t *testing.T) {
	g := NewWithT(t)
	team := uniqueName("team")
	tok := mint(t, team)
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true)}
	})
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	g.Eventually(func(g Gomega) {
		var got instancer.Instance
		g.Expect(call(t, tok, "GET", instancePath(tmpl), nil, &got)).To(Equal(http.StatusOK))
		g.Expect(got.Phase).To(Equal(string(ctfv1alpha1.PhaseError)))
	}, timeout, interval).Should(Succeed())
	g.Expect(call(t, tok, "DELETE", instancePath(tmpl), nil, nil)).To(Equal(http.StatusAccepted))
	h.EventuallyGone(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}}, timeout, "the stopped instance goes")

	// Until the instancer's cache sees it gone, a start says "stopping";
	// then it starts, no cooldown in the way.
	g.Eventually(func(g Gomega) {
		var e apiError
		code := call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, &e)
		g.Expect(e.Code).NotTo(Equal("stopping"))
		g.Expect(code).To(Equal(http.StatusCreated), "%s: %s", e.Code, e.Message)
	}, timeout, interval).Should(Succeed())
}
