// Package chartrender renders charts/challenge for a Challenge as the
// operator's translator composes its values, without a cluster: for tests
// that judge what the chart renders (the gate's, the blind-spot table's).
package chartrender

import (
	"fmt"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// Manifest renders the chart for ch, an instance of tmpl (nil for none),
// with the values values.Compose gives under settings and a stand-in flag,
// as one YAML stream in Helm's install order, as Helm writes a release's
// manifest.
func Manifest(ch *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings values.Settings) ([]byte, error) {
	vals, err := values.Compose(ch, tmpl, settings)
	if err != nil {
		return nil, err
	}
	if tmpl != nil && tmpl.Spec.Flag != nil {
		vals["flag"].(map[string]any)["value"] = "CTF{x}"
	}
	return Render(ch, vals)
}

// Render renders the chart for ch with vals, as the Helm reconciler does:
// over the chart's defaults, as one YAML stream in Helm's install order.
func Render(ch *ctfv1alpha1.Challenge, vals map[string]any) ([]byte, error) {
	chrt, err := loader.Load(filepath.Join(controlplane.RepoRoot(), "charts", "challenge"))
	if err != nil {
		return nil, err
	}
	renderVals, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: ch.Name, Namespace: ch.Namespace, IsInstall: true}, nil)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, renderVals)
	if err != nil {
		return nil, err
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	// As Helm writes a release's manifest, which the Helm reconciler
	// compares whole to decide whether an instance needs an upgrade.
	var manifest []byte
	for _, m := range manifests {
		manifest = fmt.Appendf(manifest, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return manifest, nil
}
