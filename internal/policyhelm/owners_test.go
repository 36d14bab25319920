package policyhelm

import (
	"bytes"
	"context"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/manifests"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/chartrender"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// TestOwnersAreHelmOperatorPluginsOwners: the gate's post-renderer writes
// what helm-operator-plugins' owner post-renderer (which it replaces) wrote,
// byte for byte, against a real API server's mappings: the controller
// reference in the Challenge's namespace, the owner annotations on a
// namespace of its own, on what is in it, and on what Helm's resource
// policy keeps.
func TestOwnersAreHelmOperatorPluginsOwners(t *testing.T) {
	cfg, _ := controlplane.StartAPIServer(t)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	configs, err := helmclient.NewActionConfigGetter(cfg, mapper)
	if err != nil {
		t.Fatal(err)
	}
	kept := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "ctf-teams", Annotations: map[string]string{"helm.sh/resource-policy": "keep"}},
		Data:       map[string]string{"a": "b"}}
	keptDoc, err := yaml.Marshal(kept)
	if err != nil {
		t.Fatal(err)
	}
	for name, settings := range map[string]values.Settings{
		"in the Challenge's namespace": {},
		"in a namespace of its own":    {NamespacePerInstance: true},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-team1", Namespace: "ctf-teams", UID: "uid-web-team1"},
				Spec: ctfv1alpha1.ChallengeSpec{Participant: "team1", Image: "registry.example/web:1"}}
			manifest, err := chartrender.Manifest(ch, nil, settings)
			g.Expect(err).NotTo(HaveOccurred())
			expected, err := values.Expectation(ch, nil, settings, policy.Limits{CPU: resource.MustParse("1"),
				Memory: resource.MustParse("1Gi"), EphemeralStorage: resource.MustParse("1Gi"), MaxReplicas: 1}, "", nil)
			g.Expect(err).NotTo(HaveOccurred())
			objs, err := policy.Passed(manifest, expected)
			g.Expect(err).NotTo(HaveOccurred())
			objs = append(objs, documents(g, keptDoc)...)

			owner := &unstructured.Unstructured{}
			owner.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
			owner.SetNamespace(ch.Namespace)
			owner.SetName(ch.Name)
			owner.SetUID(ch.UID)
			actionConfig, err := configs.ActionConfigFor(context.Background(), owner)
			g.Expect(err).NotTo(HaveOccurred())
			theirs, err := helmclient.DefaultPostRendererFunc(mapper, actionConfig.KubeClient, owner).
				Run(bytes.NewBuffer(append(manifest, append([]byte("---\n"), keptDoc...)...)))
			g.Expect(err).NotTo(HaveOccurred())
			ours, err := owned(objs, owner)
			g.Expect(err).NotTo(HaveOccurred())

			g.Expect(ours.String()).To(Equal(theirs.String()))
			refs, annotated := 0, 0
			for _, o := range documents(g, ours.Bytes()) {
				if len(o.GetOwnerReferences()) > 0 {
					refs++
				} else {
					annotated++
				}
			}
			g.Expect(annotated).To(BeNumerically(">=", 1), "the kept ConfigMap names its owner by annotations")
			if settings.NamespacePerInstance {
				g.Expect(refs).To(BeZero(), "nothing of its own namespace is in the Challenge's")
			} else {
				g.Expect(refs).To(Equal(len(objs)-1), "all but the kept ConfigMap")
			}
		})
	}
}

// documents parses a YAML stream into its objects.
func documents(g Gomega, stream []byte) []*unstructured.Unstructured {
	objs, err := manifests.Decode(bytes.NewReader(stream))
	g.Expect(err).NotTo(HaveOccurred())
	return objs
}
