package action

import (
	"context"
	"encoding/base64"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRecordsAreHelmsOwn: a record the operator writes is the Secret
// Helm's driver writes (name, type, labels) but for its compression, and
// Helm's driver reads it back as the release written. Only the storage
// format is under test: the clientset is client-go's fake.
func TestRecordsAreHelmsOwn(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	secrets := fake.NewClientset().CoreV1().Secrets("team")
	ours := &recordSecrets{Secrets: driver.NewSecrets(secrets), secrets: secrets, encoder: newRecordEncoder()}
	helms := driver.NewSecrets(secrets)
	rel := func(name string, status release.Status) *release.Release {
		return &release.Release{Name: name, Namespace: "team", Version: 1, Manifest: "kind: Service\n",
			Config: map[string]any{"image": "nginx:1.27"}, Labels: map[string]string{RenderHashLabel: "abc"},
			Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "challenge", Version: "0.1.0"}, Schema: []byte(`{"type":"object"}`)},
			Info:  &release.Info{Status: status, Description: "Install complete"}}
	}

	for _, write := range []func(d driver.Driver, key string, r *release.Release) error{driver.Driver.Create, driver.Driver.Update} {
		for _, d := range []driver.Driver{ours, helms} {
			name := "ours"
			if d == helms {
				name = "helms"
			}
			key := keyPrefix + name + ".v1"
			r := rel(name, release.StatusPendingInstall)
			if _, err := secrets.Get(ctx, key, metav1.GetOptions{}); err == nil { // the second round updates
				r.Info.Status = release.StatusDeployed
			}
			g.Expect(write(d, key, r)).To(Succeed())
		}
		o, err := secrets.Get(ctx, keyPrefix+"ours.v1", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		h, err := secrets.Get(ctx, keyPrefix+"helms.v1", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(o.Type).To(Equal(h.Type))
		g.Expect(o.Labels).To(HaveLen(len(h.Labels)))
		for k, v := range h.Labels {
			if k == "name" {
				continue
			}
			g.Expect(o.Labels).To(HaveKey(k))
			if k != "createdAt" && k != "modifiedAt" { // the time of each write
				g.Expect(o.Labels[k]).To(Equal(v), k)
			}
		}
		g.Expect(o.Labels["name"]).To(Equal("ours"))

		back, err := helms.Get(keyPrefix + "ours.v1")
		g.Expect(err).NotTo(HaveOccurred())
		want, err := helms.Get(keyPrefix + "helms.v1")
		g.Expect(err).NotTo(HaveOccurred())
		back.Name = want.Name
		g.Expect(back).To(Equal(want), "Helm reads the operator's record as its own")

		gz, err := base64.StdEncoding.DecodeString(string(o.Data["release"]))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gz[:3]).To(Equal([]byte{0x1f, 0x8b, 0x08}), "gzipped")
	}

	g.Expect(ours.Create(keyPrefix+"ours.v1", rel("ours", release.StatusDeployed))).To(MatchError(driver.ErrReleaseExists))
}
