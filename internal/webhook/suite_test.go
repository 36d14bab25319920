package webhook_test

import (
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// webhookLabel marks the test namespaces whose Challenges go through the webhook;
// the others show the operator's behaviour without it, on the same cluster.
const webhookLabel = "test.challenge-operator.io/webhook"

var h *harness.Harness

// teamBudgetCPU is the operator's --team-budget-cpu in these tests: room
// for the 3 CPU of TestNamespaceQuotaFromTemplate's instance, not for two
// instances of 2 CPU.
var teamBudgetCPU = resource.MustParse("3500m")

// TestMain runs the operator with the webhooks and one namespace per instance.
func TestMain(m *testing.M) {
	validating, mutating := generatedWebhooks()
	os.Exit(harness.Run(m, harness.Options{
		AsServiceAccount: true,
		Operator: operator.Options{
			MaxInstancesPerParticipant: 2,
			TeamBudgetCPU:              teamBudgetCPU,
			// TestNamespaceQuotaFromTemplate's template raises its ceilings
			// to 3 and 3Gi, as the admin lets templates here.
			Limits: policy.Limits{TemplateCPU: resource.MustParse("3"), TemplateMemory: resource.MustParse("3Gi")},
			Values: values.Settings{NamespacePerInstance: true},
		},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
	}, &h, nil))
}

// generatedWebhooks are config/webhook as kustomize builds it, limited
// to the namespaces labelled for them.
func generatedWebhooks() (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration) {
	validating, mutating, err := harness.GeneratedWebhooks()
	if err != nil {
		panic(err)
	}
	onlyLabelled := &metav1.LabelSelector{MatchLabels: map[string]string{webhookLabel: "on"}}
	for i := range validating.Webhooks {
		validating.Webhooks[i].NamespaceSelector = onlyLabelled
	}
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].NamespaceSelector = onlyLabelled
	}
	return validating, mutating
}
