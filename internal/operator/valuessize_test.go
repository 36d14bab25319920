package operator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// randomText is n bytes of random printable ASCII: text a secret file may
// hold that gzip cannot shrink much, the release record's worst case.
func randomText(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0x20 + r.IntN(95))
	}
	return b
}

// TestSecretFilesWithinTheBoundInstall: secret files of incompressible
// text up to values.MaxValuesBytes, with the instance's own text, install
// and run, their release record stored by the API server; beyond it, and
// at the former bound of 512 KiB, whose release record the API server
// refused as "Too long" (Error/InstallError), the instance is refused
// before install with Error/ValuesTooLarge naming the total, the bound and
// the largest fields, never a value, and no release record is written.
func TestSecretFilesWithinTheBoundInstall(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	r := rand.New(rand.NewPCG(16, 50))
	const file = 64 << 10
	for _, tc := range []struct {
		name  string
		sizes []int
		fits  bool
	}{
		// The instance's own text (names, image, labels) is under 8 KiB.
		{"at the bound less the instance's own text", []int{file, file, file, file - 8<<10}, true},
		{"just over the bound", []int{file, file, file, file, 1}, false},
		{"the former bound, 512 KiB", []int{file, file, file, file, file, file, file, file}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			name := fmt.Sprintf("bound-%d-%d", len(tc.sizes), tc.sizes[len(tc.sizes)-1])
			data := map[string][]byte{}
			var files []ctfv1alpha1.SecretFile
			for i, n := range tc.sizes {
				key := fmt.Sprintf("k%d", i)
				data[key] = randomText(r, n)
				files = append(files, ctfv1alpha1.SecretFile{Path: fmt.Sprintf("/etc/secret/%d", i),
					Secret: ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: name, Key: key}})
			}
			secret := harness.OrganiserSecret(name, data)
			g.Expect(k8s.Create(ctx, secret)).To(Succeed())
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
			h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.SecretFiles = files })
			ch := builders.FromTemplate(ns, name, "team-big", name)
			g.Expect(k8s.Create(ctx, ch)).To(Succeed())
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), ch) })

			recordKey := client.ObjectKey{Namespace: ns, Name: "sh.helm.release.v1." + name + ".v1"}
			if tc.fits {
				eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
				var record corev1.Secret
				g.Expect(k8s.Get(ctx, recordKey, &record)).To(Succeed())
				t.Logf("release record: %d bytes", len(record.Data["release"]))
				return
			}
			got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
			g.Expect(got.Status.Reason).To(Equal(lifecycle.ReasonValuesTooLarge), got.Status.Message)
			g.Expect(got.Status.Message).To(ContainSubstring(fmt.Sprintf("above the %d", values.MaxValuesBytes)))
			g.Expect(got.Status.Message).To(MatchRegexp(`carry \d+ bytes of text`))
			g.Expect(got.Status.Message).To(ContainSubstring(fmt.Sprintf("secretData[file.0].value (%d bytes)", file)))
			for _, v := range data {
				if len(v) < 16 {
					continue
				}
				g.Expect(got.Status.Message).NotTo(ContainSubstring(string(v[:16])), "no value in the message")
			}
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, recordKey, &corev1.Secret{}))).To(BeTrue(), "nothing installed")
		})
	}
}
