package multicomponent_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// bareNameOf is the bare name each workload of the "names" template answers
// to, by its pods' app.kubernetes.io/name label.
var bareNameOf = map[string]string{"challenge": "web", "db": "db", "flag": "flag"}

// TestBareNames: two teams' instances of a compose-like template (web, db,
// and a flag service of two replicas) side by side in one namespace, with
// bareNames. Both reach Running, the flag service with both its pods. Each
// instance's pods answer to their bare names under its own headless Service
// and resolve through its own search domain only; its headless Service
// selects exactly its own pods, and the EndpointSlice controller lists them,
// each under its bare name: "db" from one team's pods is that team's db,
// never the other's.
func TestBareNames(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "names", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		webApp(s)
		s.BareNames = &ctfv1alpha1.BareNames{Primary: "web"}
		s.Policy = &ctfv1alpha1.InstancePolicy{MaxReplicas: ptr.To[int32](2)}
		s.Env = []ctfv1alpha1.EnvVar{{Name: "DATABASE_URL", Value: "postgres://db:5432/app"}, {Name: "FLAG_URL", Value: "http://flag:8081/"}}
		s.Components = []ctfv1alpha1.Component{
			{Name: "db", Image: "docker.io/library/postgres:16", Ports: ports("pg", 5432)},
			{Name: "flag", Image: "registry.example/ctf/flag-service:1", Ports: ports("http", 8081), Replicas: ptr.To[int32](2)},
		}
	})
	ns := h.Namespace(t, nil)
	teams := []*ctfv1alpha1.Challenge{builders.FromTemplate(ns, "names-a", "team-a", "names"), builders.FromTemplate(ns, "names-b", "team-b", "names")}
	for _, ch := range teams {
		g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	}
	for _, ch := range teams {
		h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	}

	for i, ch := range teams {
		other := teams[1-i]
		service := identity.BareNamesService(ch.Name)
		search := service + "." + ns + ".svc.cluster.local"
		otherService := identity.BareNamesService(other.Name)

		headless := &corev1.Service{}
		g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: service}, headless)).To(Succeed())
		g.Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone), "headless: names, no load balancing")
		g.Expect(headless.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		g.Expect(headless.Spec.PublishNotReadyAddresses).To(BeTrue(), "a name resolves while its peer starts")
		g.Expect(headless.Spec.Ports).To(BeEmpty())
		g.Expect(headless.Spec.Selector).To(Equal(map[string]string{ctfv1alpha1.InstanceLabel: ch.Name}))
		g.Expect(headless.Labels).To(HaveKeyWithValue(ctfv1alpha1.InstanceLabel, ch.Name))

		// The pods its selector picks: exactly the instance's four, whatever the other's.
		var pods corev1.PodList
		g.Expect(h.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(headless.Spec.Selector)})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(4), "web, db and both flag replicas")
		hostnames := map[string]int{}
		own := map[string]string{} // pod name: its bare name
		for _, p := range pods.Items {
			g.Expect(p.Labels).To(HaveKeyWithValue(ctfv1alpha1.InstanceLabel, ch.Name), "none of %s's pods", other.Name)
			want := bareNameOf[p.Labels[ctfv1alpha1.NameLabel]]
			g.Expect(want).NotTo(BeEmpty(), "pod %s", p.Name)
			g.Expect(p.Spec.Hostname).To(Equal(want), "pod %s answers to its workload's bare name", p.Name)
			g.Expect(p.Spec.Subdomain).To(Equal(service), "under its own instance's headless Service")
			g.Expect(p.Spec.Subdomain).NotTo(Equal(otherService))
			g.Expect(p.Spec.DNSPolicy).To(Equal(corev1.DNSClusterFirst), "the cluster's DNS answers")
			g.Expect(p.Spec.DNSConfig).To(Equal(&corev1.PodDNSConfig{Searches: []string{search}}),
				"its own instance's search domain only: no other's, no nameserver, no option")
			hostnames[want]++
			own[p.Name] = want
		}
		g.Expect(hostnames).To(Equal(map[string]int{"web": 1, "db": 1, "flag": 2}))

		flag := &appsv1.Deployment{}
		g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ch.Name + "--flag"}, flag)).To(Succeed())
		g.Expect(flag.Spec.Replicas).To(Equal(ptr.To[int32](2)))
		g.Expect(flag.Status.ReadyReplicas).To(BeEquivalentTo(2), "Running once both replicas are ready")

		// The EndpointSlice controller publishes exactly the instance's pods, each under its bare
		// name: what the cluster DNS answers "<name>.<service>" with.
		g.Eventually(func(g Gomega) {
			var slices discoveryv1.EndpointSliceList
			g.Expect(h.Client.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: service})).To(Succeed())
			published := map[string]string{}
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					g.Expect(e.TargetRef).NotTo(BeNil())
					g.Expect(e.Addresses).NotTo(BeEmpty())
					published[e.TargetRef.Name] = ptr.Deref(e.Hostname, "")
				}
			}
			g.Expect(published).To(Equal(own), "every pod of %s under its bare name, none of %s's", ch.Name, other.Name)
		}, harness.Timeout, harness.Interval).Should(Succeed())
	}
}

// TestComponentReplicasAboveTheCeiling: a component asking for more replicas
// than its template's policy.maxReplicas allows (1 unset) makes its instance
// an Error that says so, and nothing of it runs.
func TestComponentReplicasAboveTheCeiling(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "too-many", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Components = []ctfv1alpha1.Component{{Name: "worker", Image: "registry.example/ctf/worker:1", Replicas: ptr.To[int32](3)}}
	})
	ns := h.Namespace(t, nil)
	ch := builders.FromTemplate(ns, "too-many-a", "team-a", "too-many")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("PolicyViolation"))
	g.Expect(got.Status.Message).To(ContainSubstring("component worker asks for 3 replicas, above the 1 its policy.maxReplicas allows"))
	var deps appsv1.DeploymentList
	g.Expect(h.Client.List(ctx, &deps, client.InNamespace(ns))).To(Succeed())
	g.Expect(deps.Items).To(BeEmpty())
}
