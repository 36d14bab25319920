package bundle

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	"k8s.io/utils/ptr"

	"github.com/challenge-operator/challenge-operator/internal/operatorcmd"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

var root = controlplane.RepoRoot()

// TestBundleValidates runs operator-framework's validators on the committed
// bundle: the defaults and those of operator-sdk's optional suite
// "operatorframework" (OperatorHub, standard capabilities and categories,
// deprecated APIs for the Kubernetes version given), and good practices.
// Not one error or warning is tolerated.
func TestBundleValidates(t *testing.T) {
	g := NewWithT(t)
	b, err := manifests.GetBundleFromDir(filepath.Join(root, "bundle"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.CSV).NotTo(BeNil())
	g.Expect(b.V1CRDs).To(HaveLen(2))

	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.GoodPracticesValidator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": "1.35"})
	var problems []errors.Error
	for _, res := range validators.Validate(objs...) {
		problems = append(problems, res.Errors...)
		problems = append(problems, res.Warnings...)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Level, p.Error())
	}
	g.Expect(problems).To(BeEmpty())
}

// TestBundleIsGeneratedAndReproducible rebuilds the bundle from config/manifests
// twice and compares both with the committed files.
func TestBundleIsGeneratedAndReproducible(t *testing.T) {
	g := NewWithT(t)
	build := func() map[string][]byte {
		files, err := FromKustomization(filepath.Join(root, "config", "manifests"), Options{
			Version: "0.1.0", Image: "ghcr.io/challenge-operator/challenge-operator:v0.1.0",
			CreatedAt: "2026-11-22T00:00:00Z", Channels: []string{"stable", "candidate"},
		})
		g.Expect(err).NotTo(HaveOccurred())
		return files
	}
	first, second := build(), build()
	g.Expect(second).To(Equal(first))
	for path, data := range first {
		onDisk := filepath.Join(root, "bundle", path)
		if path == "bundle.Dockerfile" {
			onDisk = filepath.Join(root, path)
		}
		committed, err := os.ReadFile(onDisk)
		g.Expect(err).NotTo(HaveOccurred(), "%s is committed (make bundle)", path)
		g.Expect(string(committed)).To(Equal(string(data)), "%s is up to date (make bundle)", path)
	}
}

func TestCSVCarriesWhatOperatorHubShows(t *testing.T) {
	g := NewWithT(t)
	b, err := manifests.GetBundleFromDir(filepath.Join(root, "bundle"))
	g.Expect(err).NotTo(HaveOccurred())
	csv := b.CSV
	g.Expect(csv.Name).To(Equal("challenge-operator.v0.1.0"))
	var modes []string
	for _, m := range csv.Spec.InstallModes {
		if m.Supported {
			modes = append(modes, string(m.Type))
		}
	}
	g.Expect(modes).To(ContainElements("OwnNamespace", "SingleNamespace", "AllNamespaces"))
	g.Expect(csv.Spec.MinKubeVersion).NotTo(BeEmpty())
	g.Expect(csv.Annotations).To(HaveKey("alm-examples"))
	var webhooks []string
	for _, w := range csv.Spec.WebhookDefinitions {
		var operations []string
		for _, r := range w.Rules {
			for _, op := range r.Operations {
				operations = append(operations, string(op))
			}
		}
		webhooks = append(webhooks, fmt.Sprintf("%s %s %v %s", w.Type, ptr.Deref(w.WebhookPath, ""), operations, ptr.Deref(w.ReinvocationPolicy, "")))
		g.Expect(w.DeploymentName).To(Equal(csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Name))
	}
	// A creation is one webhook call, which is called again after a later
	// webhook's change; updates go to the validating one.
	g.Expect(webhooks).To(Equal([]string{"MutatingAdmissionWebhook /mutate-ctf-challenge-operator-io-v1alpha1-challenge [CREATE] IfNeeded",
		"ValidatingAdmissionWebhook /validate-ctf-challenge-operator-io-v1alpha1-challenge [UPDATE] "}))
	var status []string
	for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
		if crd.Kind == "Challenge" {
			for _, d := range crd.StatusDescriptors {
				status = append(status, d.Path)
			}
		}
	}
	g.Expect(status).To(ContainElements("phase", "endpoint.address", "expiresAt"))

	// The operator parses its arguments, which ask it to bring its own
	// ServiceMonitor and alerts (the bundle cannot carry them).
	container := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
	var opts operatorcmd.Options
	flags := flag.NewFlagSet("challenge-operator", flag.ContinueOnError)
	opts.Bind(flags)
	g.Expect(flags.Parse(container.Args)).To(Succeed())
	g.Expect(flags.NArg()).To(BeZero())
	g.Expect(opts.CreateMonitors).To(BeTrue())
	g.Expect(opts.Operator.Webhook).To(BeTrue())
	annotations, err := os.ReadFile(filepath.Join(root, "bundle", "metadata", "annotations.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(annotations)).To(ContainSubstring("operators.operatorframework.io.bundle.channels.v1: stable,candidate"))
	g.Expect(string(annotations)).To(ContainSubstring("operators.operatorframework.io.bundle.channel.default.v1: stable"))
}
