package action

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/kubernetes/fake"
)

func challengeRelease(t testing.TB, name string) *release.Release {
	t.Helper()
	ch, err := loader.Load("../../charts/challenge")
	if err != nil {
		t.Fatal(err)
	}
	return &release.Release{Name: name, Namespace: "team", Version: 1, Chart: ch,
		Manifest: "---\n# Source: challenge/templates/service.yaml\nkind: Service\nmetadata:\n  name: " + name + "\n",
		Config:   map[string]any{"image": "nginx:1.27", "ports": []any{map[string]any{"port": 80}}},
		Hooks:    []*release.Hook{{Name: "pre", Kind: "Job", Events: []release.HookEvent{release.HookPreInstall}}},
		Info:     &release.Info{Status: release.StatusDeployed, Description: "Install complete"}}
}

// TestRecordEncoderIsReadByHelm: Helm's driver reads every record the
// encoder writes as the release written, whether its chart's member was
// compressed for it, kept from an earlier record, or is a changed chart's;
// and the record is the size Helm's own would be.
func TestRecordEncoderIsReadByHelm(t *testing.T) {
	g := NewWithT(t)
	secrets := fake.NewClientset().CoreV1().Secrets("team")
	encoder := newRecordEncoder()
	ours := &recordSecrets{Secrets: driver.NewSecrets(secrets), secrets: secrets, encoder: encoder}
	helms := driver.NewSecrets(secrets)

	first, second, changed := challengeRelease(t, "first"), challengeRelease(t, "second"), challengeRelease(t, "changed")
	changed.Chart.Values["replicas"] = 7
	changed.Chart.Templates = append(changed.Chart.Templates, &chart.File{Name: "templates/extra.yaml", Data: []byte("kind: ConfigMap\n")})
	bare := &release.Release{Name: "bare", Info: &release.Info{Status: release.StatusPendingInstall}} // no chart
	for _, rls := range []*release.Release{first, second, changed, bare} {
		key := keyPrefix + rls.Name + ".v1"
		g.Expect(ours.Create(key, rls)).To(Succeed())
		back, err := helms.Get(key)
		g.Expect(err).NotTo(HaveOccurred())
		back.Labels = rls.Labels
		g.Expect(jsonOf(t, back)).To(MatchJSON(jsonOf(t, rls)), rls.Name)
	}
	g.Expect(encoder.charts).To(HaveLen(2), "one member per chart, the first kept for the second record")

	record, err := encoder.encode(first)
	g.Expect(err).NotTo(HaveOccurred())
	gz, err := base64.StdEncoding.DecodeString(string(record))
	g.Expect(err).NotTo(HaveOccurred())
	r, err := gzip.NewReader(bytes.NewReader(gz))
	g.Expect(err).NotTo(HaveOccurred())
	r.Multistream(false)
	chartPart, err := io.ReadAll(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(chartPart)).To(HavePrefix(`{"chart":{"metadata":`), "the chart is a member of its own")
	g.Expect(string(chartPart)).NotTo(ContainSubstring(`"manifest"`))

	helmsRecord := helmEncoded(t, first)
	g.Expect(len(record)).To(BeNumerically("<=", len(helmsRecord)*105/100),
		"no more than 5%% larger than Helm's own record (%d bytes)", len(helmsRecord))
}

// jsonOf is rls as Helm stores it.
func jsonOf(t testing.TB, rls *release.Release) string {
	t.Helper()
	raw, err := json.Marshal(rls)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// helmEncoded is Helm's own encoding of a record: one member at gzip's best.
func helmEncoded(t testing.TB, rls *release.Release) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write([]byte(jsonOf(t, rls)))
	_ = w.Close()
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// BenchmarkRecordEncode: a record of the challenge chart, written by the
// operator's encoder (its chart's member kept) and as Helm writes it.
func BenchmarkRecordEncode(b *testing.B) {
	rls := challengeRelease(b, "bench")
	encoder := newRecordEncoder()
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encoder.encode(rls); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("helm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			helmEncoded(b, rls)
		}
	})
}
