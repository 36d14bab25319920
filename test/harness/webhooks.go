package harness

import (
	"fmt"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/challenge-operator/challenge-operator/internal/manifests"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// GeneratedWebhooks are config/webhook as kustomize builds it (controller-gen's
// manifests and the patches beside them): the webhooks the operator serves
// with --enable-webhook, as the OLM bundle installs them.
func GeneratedWebhooks() (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration, error) {
	objs, err := manifests.Kustomize(filepath.Join(controlplane.RepoRoot(), "config", "webhook"))
	if err != nil {
		return nil, nil, err
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	for _, o := range objs {
		var into any
		switch o.GetKind() {
		case "ValidatingWebhookConfiguration":
			into = validating
		case "MutatingWebhookConfiguration":
			into = mutating
		default:
			return nil, nil, fmt.Errorf("config/webhook holds a %s", o.GetKind())
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
			return nil, nil, err
		}
	}
	return validating, mutating, nil
}
