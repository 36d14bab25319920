package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/webhook"
	"github.com/challenge-operator/challenge-operator/test/builders"
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
			ch := builders.Challenge(ns, "finalized", "team-finalized")
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

// TestCreationIsOneWebhookCall: a Challenge's creation costs the API server
// one webhook call, the creation webhook's, which both judges it and sets
// the finalizer; the validating webhook is called for updates only.
func TestCreationIsOneWebhookCall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.Namespace(t, map[string]string{webhookLabel: "on"})
	ch := builders.Challenge(ns, "once", "team-once")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	g.Expect(ch.Finalizers).To(ConsistOf(ctfv1alpha1.UninstallFinalizer))

	calls := webhookCalls(g)
	g.Expect(calls).To(HaveKeyWithValue("mchallenge.ctf.challenge-operator.io CREATE", BeNumerically(">=", 1)), "%v", calls)
	g.Expect(calls).NotTo(HaveKey("vchallenge.ctf.challenge-operator.io CREATE"), "%v", calls)
}

// webhookCalls are the API server's webhook calls since it started, by
// webhook and operation ("name OPERATION").
func webhookCalls(g Gomega) map[string]float64 {
	cs, err := kubernetes.NewForConfig(h.Cluster.Config)
	g.Expect(err).NotTo(HaveOccurred())
	body, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	const metric = "apiserver_admission_webhook_admission_duration_seconds_count{"
	label := func(line, name string) string {
		_, rest, _ := strings.Cut(line, name+`="`)
		value, _, _ := strings.Cut(rest, `"`)
		return value
	}
	calls := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		if !strings.HasPrefix(line, metric) {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndex(line, " "):]), 64)
		g.Expect(err).NotTo(HaveOccurred(), line)
		calls[label(line, "name")+" "+label(line, "operation")] += n
	}
	return calls
}

// TestCreationPatch: the creation webhook patches the finalizers alone,
// adds the finalizer once, on creation only, and only in the namespaces the
// operator reconciles (a finalizer no reconciler removes would keep a
// Challenge from being deleted).
func TestCreationPatch(t *testing.T) {
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
			ch := builders.Challenge(tc.namespace, "c", "team-c")
			ch.Finalizers = tc.finalizers
			c := &webhook.Creation{Decoder: decoder(g), Validator: &validator{}, Namespaces: []string{"ctf", "ctf-pool"}}
			resp := c.Handle(context.Background(), request(g, tc.op, ch))
			g.Expect(resp.Allowed).To(BeTrue(), "never refused")
			g.Expect(normalised(g, resp.Patches)).To(Equal(normalised(g, tc.want)))
		})
	}
	t.Run("any namespace when none is named", func(t *testing.T) {
		g := NewWithT(t)
		c := &webhook.Creation{Decoder: decoder(g), Validator: &validator{}}
		resp := c.Handle(context.Background(), request(g, admissionv1.Create, builders.Challenge("anywhere", "c", "team-c")))
		g.Expect(normalised(g, resp.Patches)).To(Equal(normalised(g, []jsonpatch.JsonPatchOperation{add})))
	})
}

// TestCreationIsValidated: the creation webhook refuses what the validator
// refuses, with its status and warnings and no patch; it asks the validator
// about every Challenge but a pooled instance, and passes its warnings on.
func TestCreationIsValidated(t *testing.T) {
	g := NewWithT(t)
	refusal := apierrors.NewForbidden(ctfv1alpha1.GroupVersion.WithResource("challenges").GroupResource(), "c", errors.New("QuotaExceeded: no more"))
	refusing := &validator{err: refusal, warnings: admission.Warnings{"careful"}}
	c := &webhook.Creation{Decoder: decoder(g), Validator: refusing}
	resp := c.Handle(context.Background(), request(g, admissionv1.Create, builders.Challenge("ctf", "c", "team-c")))
	g.Expect(resp.Allowed).To(BeFalse())
	g.Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusForbidden))
	g.Expect(resp.Result.Message).To(ContainSubstring("QuotaExceeded: no more"))
	g.Expect(resp.Warnings).To(Equal([]string{"careful"}))
	g.Expect(resp.Patches).To(BeEmpty())
	g.Expect(refusing.asked).To(Equal(1))

	pooled := builders.Challenge("ctf", "p", "")
	pooled.Labels = map[string]string{ctfv1alpha1.PoolLabel: "tmpl"}
	resp = c.Handle(context.Background(), request(g, admissionv1.Create, pooled))
	g.Expect(resp.Allowed).To(BeTrue(), "a pooled instance is the operator's to check")
	g.Expect(resp.Patches).To(HaveLen(1))
	g.Expect(refusing.asked).To(Equal(1), "not asked about a pooled instance")

	warning := &validator{warnings: admission.Warnings{"template missing"}}
	resp = (&webhook.Creation{Decoder: decoder(g), Validator: warning}).Handle(context.Background(), request(g, admissionv1.Create, builders.Challenge("ctf", "w", "team-w")))
	g.Expect(resp.Allowed).To(BeTrue())
	g.Expect(resp.Warnings).To(Equal([]string{"template missing"}))
	g.Expect(resp.Patches).To(HaveLen(1))
}

// validator answers ValidateCreate with err and warnings, and counts how
// often it was asked.
type validator struct {
	err      error
	warnings admission.Warnings
	asked    int
}

func (v *validator) ValidateCreate(context.Context, *ctfv1alpha1.Challenge) (admission.Warnings, error) {
	v.asked++
	return v.warnings, v.err
}

func decoder(g Gomega) admission.Decoder {
	scheme := runtime.NewScheme()
	g.Expect(ctfv1alpha1.AddToScheme(scheme)).To(Succeed())
	return admission.NewDecoder(scheme)
}

// request is the admission request of op on ch.
func request(g Gomega, op admissionv1.Operation, ch *ctfv1alpha1.Challenge) admission.Request {
	ch.APIVersion, ch.Kind = ctfv1alpha1.GroupVersion.String(), "Challenge"
	raw, err := json.Marshal(ch)
	g.Expect(err).NotTo(HaveOccurred())
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Namespace: ch.Namespace, Object: runtime.RawExtension{Raw: raw}}}
}

// normalised is patches as JSON, so that values of any Go type compare.
func normalised(g Gomega, patches []jsonpatch.JsonPatchOperation) string {
	data, err := json.Marshal(patches)
	g.Expect(err).NotTo(HaveOccurred())
	return string(data)
}
