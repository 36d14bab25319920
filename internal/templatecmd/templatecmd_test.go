package templatecmd

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestImportPrintsTheTemplateAndItsReport: the template on standard output,
// ready to apply; the report on the other, one line each.
func TestImportPrintsTheTemplateAndItsReport(t *testing.T) {
	g := NewWithT(t)
	var out, report bytes.Buffer
	file := filepath.Join("..", "importer", "testdata", "kctf-web", "challenge.yaml")
	g.Expect(Run(context.Background(), []string{"import", "--name", "xss", file}, &out, &report)).To(Succeed())
	var tmpl ctfv1alpha1.ChallengeTemplate
	g.Expect(yaml.UnmarshalStrict(out.Bytes(), &tmpl)).To(Succeed())
	g.Expect(tmpl.Kind).To(Equal("ChallengeTemplate"))
	g.Expect(tmpl.Name).To(Equal("xss"))
	g.Expect(report.String()).To(HavePrefix("not carried: image: kCTF builds it"))
	g.Expect(report.String()).To(ContainSubstring("\nchanged: port 1337 (HTTPS)"))

	g.Expect(Run(context.Background(), []string{"export", file}, &out, &report)).To(MatchError(ContainSubstring("usage: challenge-operator template import")))
	g.Expect(Run(context.Background(), []string{"import"}, &out, &report)).To(MatchError("template import needs exactly one file"))
}
