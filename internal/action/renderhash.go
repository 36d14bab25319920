package action

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
)

// RenderHashLabel is the release label holding the hash of what the release
// was rendered from: the chart, the values and the inputs the operator adds
// (the template's generation, the policy in force).
const RenderHashLabel = "challenge-operator.io/render-hash"

// renderHash hashes what a release is rendered from.
func renderHash(chrt *chart.Chart, vals map[string]any, inputs string) (string, error) {
	v, err := json.Marshal(vals) // maps marshal with sorted keys
	if err != nil {
		return "", fmt.Errorf("hashing values: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(chartDigest(chrt)))
	h.Write([]byte{0})
	h.Write(v)
	h.Write([]byte{0})
	h.Write([]byte(inputs))
	return hex.EncodeToString(h.Sum(nil))[:40], nil
}

var chartDigests sync.Map // *chart.Chart -> string; the reconciler keeps one chart for its lifetime

// chartDigest hashes a chart's metadata and files, once per loaded chart.
func chartDigest(chrt *chart.Chart) string {
	if d, ok := chartDigests.Load(chrt); ok {
		return d.(string)
	}
	h := sha256.New()
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		if c.Metadata != nil {
			_, _ = fmt.Fprintf(h, "%s\x00%s\x00", c.Metadata.Name, c.Metadata.Version)
		}
		for _, files := range [][]*chart.File{c.Templates, c.Files} {
			for _, f := range files {
				_, _ = fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
				h.Write(f.Data)
			}
		}
		values, _ := json.Marshal(c.Values)
		h.Write(values)
		h.Write(c.Schema)
		for _, dep := range c.Dependencies() {
			walk(dep)
		}
	}
	walk(chrt)
	d := hex.EncodeToString(h.Sum(nil))
	chartDigests.Store(chrt, d)
	return d
}

// isDryRun reports whether upgrade options ask for a dry run, as the Helm
// reconciler's check for changes does.
func isDryRun(opts []helmclient.UpgradeOption) bool {
	u := &action.Upgrade{}
	for _, o := range opts {
		if err := o(u); err != nil {
			return false
		}
	}
	return u.DryRun
}

// unchangedRelease returns the last release when it is deployed and was
// rendered from the same hash: the Helm reconciler's dry-run upgrade (every
// object of the release sent to the API server) would only find the manifest
// unchanged, and its drift repair runs all the same.
func unchangedRelease(cfg *action.Configuration, name, hash string) *release.Release {
	last, err := cfg.Releases.Last(name)
	if err != nil || last.Info == nil || last.Info.Status != release.StatusDeployed || last.Labels[RenderHashLabel] != hash {
		return nil
	}
	return last
}

// withLabel adds the render hash to the labels an install or upgrade stores.
func withLabel(labels map[string]string, hash string) map[string]string {
	out := map[string]string{RenderHashLabel: hash}
	for k, v := range labels {
		if k != RenderHashLabel {
			out[k] = v
		}
	}
	return out
}
