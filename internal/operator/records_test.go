package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/action"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestForgedReleaseRecordIsRefused forges a release record as whoever may
// write Secrets in a Challenge's namespace can: the real last record copied,
// its render hash kept, objects added to its manifest. The operator acts on
// no such record: drift repair does not create what it adds, an upgrade and
// an uninstall do not delete the bystanders it lists; the Challenge shows
// Error/PolicyViolation naming the object, and goes once the record does.
func TestForgedReleaseRecordIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name    string
		added   func(ns string) string // documents added to the record
		trigger func(g *WithT, ch *ctfv1alpha1.Challenge)
		refused string // the object the refusal names
	}{
		{"drift repair", intruderSA, deleteService, "ServiceAccount %s/intruder"},
		{"upgrade", bystanderDocs, changeSpec, "ServiceAccount %s/bystander"},
		{"uninstall", bystanderDocs, deleteChallenge, "ServiceAccount %s/bystander"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := namespace(t)
			name := "forged-" + strings.ReplaceAll(tt.name, " ", "-")
			ch := builders.Challenge(ns, name, "team-"+name)
			g.Expect(k8s.Create(ctx, ch)).To(Succeed())
			eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
			bystanders := []client.Object{
				&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bystander"}},
				&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bystander"}},
			}
			for _, b := range bystanders {
				g.Expect(k8s.Create(ctx, b)).To(Succeed())
			}

			releases := helmStorage(t, ns)
			last, err := releases.Last(name)
			g.Expect(err).NotTo(HaveOccurred())
			forged := *last
			forged.Version = last.Version + 1
			forged.Manifest = last.Manifest + tt.added(ns)
			g.Expect(releases.Create(&forged)).To(Succeed())

			tt.trigger(g, ch)
			refused := fmt.Sprintf(tt.refused, ns)
			// The harm first, so that it is what a failure reports.
			g.Eventually(func(g Gomega) {
				err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "intruder"}, &corev1.ServiceAccount{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ServiceAccount only the record lists is not created: %v", err)
				expectPresent(g, bystanders...)
				g.Expect(eventNotes(ctx, g, ch, action.ReasonRecordRefused)).To(ContainElement(ContainSubstring(refused)))
			}, timeout, interval).Should(Succeed(), "the forged record is refused")
			got := &ctfv1alpha1.Challenge{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed(), "the Challenge is still there")
			if got.DeletionTimestamp.IsZero() {
				g.Eventually(func(g Gomega) {
					g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
					g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseError))
					g.Expect(got.Status.Reason).To(Equal("PolicyViolation"))
					g.Expect(got.Status.Message).To(ContainSubstring(refused))
				}, timeout, interval).Should(Succeed(), "the Challenge shows the refusal")
			}
			err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "intruder"}, &corev1.ServiceAccount{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ServiceAccount only the record lists is not created: %v", err)
			expectPresent(g, bystanders...)

			// The cluster admin removes the forged record: the instance goes
			// (the Helm reconciler's Get answers the real record again), and
			// the bystanders stay.
			g.Expect(releases.Delete(name, forged.Version)).Error().NotTo(HaveOccurred())
			g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, ch))).To(Succeed())
			h.EventuallyGone(t, ch, timeout, "the Challenge goes once the forged record is gone")
			expectPresent(g, bystanders...)
		})
	}
}

// TestFailedUpgradeAppliesNoStoredRecord: a failed upgrade is not rolled
// back, since a rollback applies the previous record without the policy
// gate. Here that record is forged (a hostPID Deployment, every name the
// instance's own) and the upgrade fails on a quota refusing node ports.
func TestFailedUpgradeAppliesNoStoredRecord(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "rolled", "team-rolled")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	g.Expect(k8s.Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-node-ports"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServicesNodePorts: resource.MustParse("0")}},
	})).To(Succeed())

	releases := helmStorage(t, ns)
	last, err := releases.Last(ch.Name)
	g.Expect(err).NotTo(HaveOccurred())
	forged := *last
	forged.Version = last.Version + 1
	forged.Manifest = withHostPID(g, last.Manifest)
	g.Expect(releases.Create(&forged)).To(Succeed())

	got := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeNodePort}
	g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	failed := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(failed.Status.Message).To(ContainSubstring("exceeded quota"))

	dep := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), dep)).To(Succeed())
	g.Expect(dep.Spec.Template.Spec.HostPID).To(BeFalse(), "the forged record is not applied by a rollback")

	g.Expect(k8s.Delete(ctx, ch)).To(Succeed())
	h.EventuallyGone(t, ch, timeout, "the instance goes")
}

// withHostPID returns manifest with its Deployment's pods in the host's PID namespace.
func withHostPID(g *WithT, manifest string) string {
	var out strings.Builder
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var dep appsv1.Deployment
		if yaml.Unmarshal([]byte(doc), &dep) == nil && dep.Kind == "Deployment" {
			dep.Spec.Template.Spec.HostPID = true
			b, err := yaml.Marshal(&dep)
			g.Expect(err).NotTo(HaveOccurred())
			doc = string(b)
		}
		out.WriteString("---\n" + doc + "\n")
	}
	return out.String()
}

// TestLabelledDecoyDoesNotHoldTheTeardown labels a Service in another
// namespace with an instance's labels: the instance's teardown ignores it.
func TestLabelledDecoyDoesNotHoldTheTeardown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, elsewhere := namespace(t), namespace(t)
	ch := builders.Challenge(ns, "decoyed", "team-decoyed")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	decoy := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere, Name: "decoy", Labels: instanceLabels(ch)},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	g.Expect(k8s.Create(ctx, decoy)).To(Succeed())

	g.Expect(k8s.Delete(ctx, ch)).To(Succeed())
	h.EventuallyGone(t, ch, timeout, "the decoy does not keep the finalizer")
	expectPresent(g, decoy)
}

// TestLeftoversDeleteOnlyTheInstanceNamespace: with a namespace per
// instance, a Namespace someone labelled with an instance's labels is not
// deleted with the instance, nor waited for; the instance's own one is.
func TestLeftoversDeleteOnlyTheInstanceNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "owner", "team-owner")
	leftovers := operator.Leftovers(k8s, nil, true, false)

	bystander := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-bystander", Labels: instanceLabels(ch)}}
	g.Expect(k8s.Create(ctx, bystander)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), bystander) })
	g.Expect(leftovers(ctx, ch)).To(Succeed(), "nothing of the instance is left")
	got := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(bystander), got)).To(Succeed())
	g.Expect(got.DeletionTimestamp).To(BeNil(), "the bystander Namespace is not deleted")

	own := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operator.InstanceNamespace(ch), Labels: instanceLabels(ch)}}
	g.Expect(k8s.Create(ctx, own)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), own) })
	g.Expect(leftovers(ctx, ch)).NotTo(Succeed(), "the instance's namespace is left until it goes")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(own), got)).To(Succeed())
	g.Expect(got.DeletionTimestamp).NotTo(BeNil(), "the instance's own Namespace is deleted")
}

// eventNotes returns the notes of the Events with reason about ch.
func eventNotes(ctx context.Context, g Gomega, ch *ctfv1alpha1.Challenge, reason string) []string {
	var events eventsv1.EventList
	g.Expect(k8s.List(ctx, &events, client.InNamespace(ch.Namespace))).To(Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.Regarding.Kind == "Challenge" && e.Regarding.Name == ch.Name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

func instanceLabels(ch *ctfv1alpha1.Challenge) map[string]string {
	return map[string]string{ctfv1alpha1.InstanceLabel: ch.Name, ctfv1alpha1.InstanceNamespaceLabel: ch.Namespace}
}

func expectPresent(g Gomega, objs ...client.Object) {
	for _, obj := range objs {
		got := obj.DeepCopyObject().(client.Object)
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), got)).To(Succeed(), "%T %s survives", obj, obj.GetName())
		g.Expect(got.GetDeletionTimestamp()).To(BeNil(), "%T %s is not being deleted", obj, obj.GetName())
	}
}

func intruderSA(ns string) string {
	return fmt.Sprintf("---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: intruder\n  namespace: %s\n", ns)
}

func bystanderDocs(ns string) string {
	return fmt.Sprintf("---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: bystander\n  namespace: %[1]s\n"+
		"---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: bystander\n  namespace: %[1]s\nspec:\n  podSelector: {}\n", ns)
}

// deleteService starts drift repair: the Service comes back from the record.
func deleteService(g *WithT, ch *ctfv1alpha1.Challenge) {
	g.Expect(k8s.Delete(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ch.Namespace, Name: ch.Name}})).To(Succeed())
}

// changeSpec starts an upgrade.
func changeSpec(g *WithT, ch *ctfv1alpha1.Challenge) {
	got := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ch), got)).To(Succeed())
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Values = harness.Values(`{"env": [{"name": "CHANGED", "value": "1"}]}`)
	g.Expect(k8s.Patch(context.Background(), got, patch)).To(Succeed())
}

func deleteChallenge(g *WithT, ch *ctfv1alpha1.Challenge) {
	g.Expect(k8s.Delete(context.Background(), ch)).To(Succeed())
}

// TestReleaseRecordIsHelmsAndTheChallenges: the record of an install is a
// Secret of Helm's type and labels, controlled by its Challenge (the
// garbage collector's fallback), which Helm's own driver reads as
// deployed.
func TestReleaseRecordIsHelmsAndTheChallenges(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "recorded", "team-recorded")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	var records corev1.SecretList
	g.Expect(k8s.List(ctx, &records, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": ch.Name})).To(Succeed())
	g.Expect(records.Items).To(HaveLen(1))
	record := records.Items[0]
	g.Expect(record.Type).To(BeEquivalentTo("helm.sh/release.v1"))
	g.Expect(record.Labels).To(HaveKeyWithValue("status", "deployed"))
	g.Expect(record.Labels).To(HaveKey("modifiedAt"), "deployed by an update of the pending record")
	g.Expect(record.Labels).To(HaveKey(action.RenderHashLabel))
	g.Expect(metav1.GetControllerOf(&record)).To(HaveField("UID", ch.UID))

	rel, err := helmStorage(t, ns).Deployed(ch.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Manifest).To(ContainSubstring("kind: Deployment"))
}
