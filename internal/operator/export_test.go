package operator

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challenge"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/chartrender"
)

// LimitedBroadcaster is the broadcaster of the operator's bounded Events.
var LimitedBroadcaster = limitedBroadcaster

// RenderForGate renders charts/challenge for ch, an instance of tmpl, as the
// translator composes its values (with a stand-in flag), and returns the
// manifest with the Instance the operator's gate holds it to under opts.
func RenderForGate(ch *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, opts Options) ([]byte, policy.Instance, error) {
	manifest, err := chartrender.Manifest(ch, tmpl, opts.Values)
	if err != nil {
		return nil, policy.Instance{}, err
	}
	in, err := values.Expectation(ch, tmpl, opts.Values, gateLimits(opts), "", nil)
	return manifest, in, err
}

// Leftovers is the teardown's check for what remains of an instance, on a
// client that serves no index.
func Leftovers(cl client.Client, pools *pool.Pools, namespacePerInstance, gateways bool) func(context.Context, client.Object) error {
	return challenge.Teardown{Client: cl, Pools: pools, NamespacePerInstance: namespacePerInstance, Gateways: gateways}.Leftovers
}

// InstanceNamespace is the namespace of its own an instance gets.
func InstanceNamespace(ch *ctfv1alpha1.Challenge) string { return identity.Namespace(ch) }
