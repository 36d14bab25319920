package webhook_test

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/webhook"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestFinalizerIsSetAtCreation: with the webhook, a Challenge is created
// with the Helm reconciler's finalizer, and the operator never updates it
// to add one (that update was one request of every install); without it,
// the reconciler adds the finalizer itself, as for Challenges created
// before the webhook. Both are torn down whole.
func TestFinalizerIsSetAtCreation(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		labels        map[string]string
		atCreation    bool
		finalizerPuts int
	}{
		{"with the webhook", map[string]string{webhookLabel: "on"}, true, 0},
		{"without the webhook", nil, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := h.Namespace(t, tc.labels)
			ch := harness.NewChallenge(ns, "finalized", "team-finalized")
			g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
			g.Expect(ch.Finalizers).To(Equal(map[bool][]string{true: {ctfv1alpha1.UninstallFinalizer}}[tc.atCreation]), "as created")

			got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
			g.Expect(got.Finalizers).To(ConsistOf(ctfv1alpha1.UninstallFinalizer))
			g.Expect(h.Requests.In(ns)["PATCH challenges"]).To(Equal(tc.finalizerPuts), "the reconciler's finalizer patches: %v", h.Requests.In(ns))

			g.Expect(h.Client.Delete(ctx, ch)).To(Succeed())
			h.EventuallyGone(t, ch, harness.Timeout, "torn down and its finalizer removed")
		})
	}
}

// TestFinalizerPatch: the webhook patches the finalizers alone, adds the
// finalizer once, on creation only, and only in the namespaces the operator
// reconciles (a finalizer no reconciler removes would keep a Challenge from
// being deleted).
func TestFinalizerPatch(t *testing.T) {
	add := jsonpatch.NewOperation("add", "/metadata/finalizers", []any{ctfv1alpha1.UninstallFinalizer})
	appendOne := jsonpatch.NewOperation("add", "/metadata/finalizers/-", ctfv1alpha1.UninstallFinalizer)
	for _, tc := range []struct {
		name       string
		op         admissionv1.Operation
		namespace  string
		finalizers []string
		want       []jsonpatch.JsonPatchOperation
	}{
		{"created", admissionv1.Create, "ctf", nil, []jsonpatch.JsonPatchOperation{add}},
		{"created with a finalizer of another", admissionv1.Create, "ctf", []string{"example.com/keep"}, []jsonpatch.JsonPatchOperation{appendOne}},
		{"created with it", admissionv1.Create, "ctf", []string{ctfv1alpha1.UninstallFinalizer}, nil},
		{"updated", admissionv1.Update, "ctf", nil, nil},
		{"in a namespace not reconciled", admissionv1.Create, "elsewhere", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ch := harness.NewChallenge(tc.namespace, "c", "team-c")
			ch.Finalizers = tc.finalizers
			raw, err := json.Marshal(ch)
			g.Expect(err).NotTo(HaveOccurred())
			f := &webhook.Finalizer{Namespaces: []string{"ctf", "ctf-pool"}}
			resp := f.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tc.op, Namespace: tc.namespace, Object: runtime.RawExtension{Raw: raw}}})
			g.Expect(resp.Allowed).To(BeTrue(), "never refused")
			g.Expect(normalised(g, resp.Patches)).To(Equal(normalised(g, tc.want)))
		})
	}
	t.Run("any namespace when none is named", func(t *testing.T) {
		g := NewWithT(t)
		raw, err := json.Marshal(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "anywhere", Name: "c"}})
		g.Expect(err).NotTo(HaveOccurred())
		resp := (&webhook.Finalizer{}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "anywhere", Object: runtime.RawExtension{Raw: raw}}})
		g.Expect(normalised(g, resp.Patches)).To(Equal(normalised(g, []jsonpatch.JsonPatchOperation{add})))
	})
}

// normalised is patches as JSON, so that values of any Go type compare.
func normalised(g Gomega, patches []jsonpatch.JsonPatchOperation) string {
	data, err := json.Marshal(patches)
	g.Expect(err).NotTo(HaveOccurred())
	return string(data)
}
