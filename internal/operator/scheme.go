package operator

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// NewScheme holds every type the operator reads: Kubernetes', its own, and
// the Gateway API's, whose routes expose instances (read only where
// --gateways names Gateways, so a cluster without the Gateway API's CRDs
// never starts an informer for them).
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, ctfv1alpha1.AddToScheme, gatewayv1.Install} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}
