package operator

import (
	"context"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// RenderForGate renders charts/challenge for ch, an instance of tmpl, as the
// translator composes its values (with a stand-in flag), and returns the
// manifest with the Instance the operator's gate holds it to under opts.
func RenderForGate(ch *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, opts Options) ([]byte, policy.Instance, error) {
	vals, err := values.Compose(ch, tmpl, opts.Values)
	if err != nil {
		return nil, policy.Instance{}, err
	}
	if tmpl != nil && tmpl.Spec.Flag != nil {
		vals["flag"].(map[string]any)["value"] = "CTF{x}"
	}
	chrt, err := loader.Load(filepath.Join(controlplane.RepoRoot(), "charts", "challenge"))
	if err != nil {
		return nil, policy.Instance{}, err
	}
	renderVals, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: ch.Name, Namespace: ch.Namespace, IsInstall: true}, nil)
	if err != nil {
		return nil, policy.Instance{}, err
	}
	files, err := engine.Render(chrt, renderVals)
	if err != nil {
		return nil, policy.Instance{}, err
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, policy.Instance{}, err
	}
	var manifest []byte
	for _, m := range manifests {
		manifest = append(manifest, []byte("---\n"+m.Content+"\n")...)
	}
	in, err := values.Expectation(ch, tmpl, opts.Values, gateLimits(opts), "", nil)
	return manifest, in, err
}

// Leftovers is the teardown's check for what remains of an instance, on a
// client that serves no index.
func Leftovers(cl client.Client, pools *pool.Pools, namespacePerInstance, gateways bool) func(context.Context, client.Object) error {
	return leftovers(cl, pools, Features{NamespacePerInstance: namespacePerInstance, Gateways: gateways, Pools: pools != nil}, false)
}

// InstanceNamespace is the namespace of its own an instance gets.
func InstanceNamespace(ch *ctfv1alpha1.Challenge) string { return identity.Namespace(ch) }
