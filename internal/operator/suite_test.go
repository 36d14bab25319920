package operator_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

const (
	timeout  = harness.Timeout
	interval = harness.Interval
)

// internalCIDRs are the test cluster's pod and service ranges and the metadata address.
var internalCIDRs = []string{"10.244.0.0/16", "10.96.0.0/12", "169.254.169.254/32"}

// wildcardTLS is the organiser's wildcard certificate Secret instances may serve.
const wildcardTLS = "wildcard-tls"

// ingressNamespace is where the (imaginary) ingress controller runs: its pods may connect to instances.
const ingressNamespace = "ingress-nginx"

var (
	h       *harness.Harness
	k8s     client.Client
	cluster *controlplane.Cluster
)

// TestMain starts the control plane and the operator once for the package.
func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{AsServiceAccount: true, Operator: operator.Options{
		MaxConcurrentReconciles: 4,
		// As shipped (--event-qps, --event-burst).
		Events:          operator.EventLimit{QPS: 50, Burst: 100},
		PoolNamespace:   poolNamespace,
		CanaryNamespace: poolNamespace,
		FlagCodec:       harness.FlagCodec(),
		FlagWriterImage: flagWriterImage,
		Values:          values.Settings{InternalCIDRs: internalCIDRs, IngressFromNamespaces: []string{ingressNamespace}},
		Limits:          policy.Limits{TLSSecrets: []string{wildcardTLS}},
	}}, &h, func() { k8s, cluster = h.Client, h.Cluster }))
}

// flagWriterImage is the image the operator writes pooled instances' flags with.
const flagWriterImage = "registry.example/challenge-operator:test"

// poolNamespace holds the warm pools' instances.
const poolNamespace = "ctf-pool"

func namespace(t *testing.T) string { return h.Namespace(t, nil) }

func eventuallyPhase(t *testing.T, ch *ctfv1alpha1.Challenge, phase ctfv1alpha1.Phase) *ctfv1alpha1.Challenge {
	return h.EventuallyPhase(t, ch, phase)
}
