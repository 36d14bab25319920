package policyhelm_test

import (
	"bytes"
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/policyhelm"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/chartrender"
)

// noIngresses is a reader of a cluster without other instances' Ingresses.
type noIngresses struct{ client.Reader }

func (noIngresses) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// limits are ceilings the chart's defaults are within.
var limits = policy.Limits{CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi"), EphemeralStorage: resource.MustParse("1Gi"), MaxReplicas: 1}

// TestGateJudgesARenderByItsTranslation: the gate holds a render to what
// the translator computed with its values, for as long as the Challenge's
// reconcile runs, and refuses a render nothing was translated for.
func TestGateJudgesARenderByItsTranslation(t *testing.T) {
	g := NewWithT(t)
	ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-team1", Namespace: "ctf-teams"},
		Spec: ctfv1alpha1.ChallengeSpec{Participant: "team1", Image: "registry.example/web:1"}}
	expected, err := values.Expectation(ch, nil, values.Settings{}, limits, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := chartrender.Manifest(ch, nil, values.Settings{})
	g.Expect(err).NotTo(HaveOccurred())
	gt := &policyhelm.Gate{Reader: noIngresses{}}
	run := func() error {
		_, err := gt.PostRenderer(ch).Run(bytes.NewBuffer(manifest))
		return err
	}
	g.Expect(run()).To(MatchError(ContainSubstring("no values were translated")), "no translation: refused")

	key := client.ObjectKeyFromObject(ch)
	var during, record error
	helm := gt.Scoped(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
		gt.Expect(key, expected) // the translator's part of the reconcile
		during = run()
		record = gt.CheckRecord(ctx, ch, string(manifest), true)
		return reconcile.Result{}, nil
	}))
	_, err = helm.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(during).To(Succeed(), "a render judged by its translation")
	g.Expect(record).To(Succeed(), "a record to repair drift with, judged by the same")
	g.Expect(run()).To(MatchError(ContainSubstring("no values were translated")), "forgotten once the reconcile ends")

	claimed, err := values.Expectation(ch, nil, values.Settings{}, limits, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	claimed.Labels[ctfv1alpha1.ParticipantLabel] = "team2"
	gt.Expect(key, claimed)
	g.Expect(run()).To(MatchError(ContainSubstring(ctfv1alpha1.ParticipantLabel)), "held to the translation's identity, not recomputed")
}

// TestRecordsAreJudgedForWhoseTheyAre: a stored record the reconciler only
// deletes from is judged, without a translation, for whether every object
// it lists is the instance's own.
func TestRecordsAreJudgedForWhoseTheyAre(t *testing.T) {
	g := NewWithT(t)
	ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-team1", Namespace: "ctf-teams"},
		Spec: ctfv1alpha1.ChallengeSpec{Participant: "team1", Image: "registry.example/web:1"}}
	gt := &policyhelm.Gate{Reader: noIngresses{}}
	own, err := chartrender.Manifest(ch, nil, values.Settings{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gt.CheckRecord(context.Background(), ch, string(own), false)).To(Succeed())
	other := ch.DeepCopy()
	other.Name = "web-team2"
	theirs, err := chartrender.Manifest(other, nil, values.Settings{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gt.CheckRecord(context.Background(), ch, string(theirs), false)).To(HaveOccurred(), "another instance's objects")
}
