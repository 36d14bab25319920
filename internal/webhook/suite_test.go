package webhook_test

import (
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
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

// TestMain runs the operator with the webhook and one namespace per instance.
func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{
		AsServiceAccount: true,
		Operator: operator.Options{
			MaxInstancesPerParticipant: 2,
			TeamBudgetCPU:              teamBudgetCPU,
			Values:                     values.Settings{NamespacePerInstance: true},
		},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{generatedWebhook()},
	}, &h, nil))
}

// generatedWebhook is config/webhook as controller-gen writes it, limited to
// the namespaces labelled for it.
func generatedWebhook() *admissionregistrationv1.ValidatingWebhookConfiguration {
	data, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "webhook", "manifests.yaml"))
	if err != nil {
		panic(err)
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := yaml.Unmarshal(data, cfg); err != nil {
		panic(err)
	}
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{webhookLabel: "on"}}
	}
	return cfg
}
