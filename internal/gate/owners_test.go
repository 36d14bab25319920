package gate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	. "github.com/onsi/gomega"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/chartrender"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// TestOwnersAreHelmOperatorPluginsOwners: the gate's post-renderer writes
// each object with the owner helm-operator-plugins' owner post-renderer
// (which it replaces) gave it, against a real API server's mappings: the
// controller reference in the Challenge's namespace, the owner annotations
// on a namespace of its own, on what is in it, and on what Helm's resource
// policy keeps; and the objects themselves as they were.
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
	kept := []byte(`---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  namespace: ctf-teams
  annotations:
    helm.sh/resource-policy: keep
data:
  a: b
`)
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
			objs = append(objs, documents(g, kept)...)

			owner := &unstructured.Unstructured{}
			owner.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
			owner.SetNamespace(ch.Namespace)
			owner.SetName(ch.Name)
			owner.SetUID(ch.UID)
			actionConfig, err := configs.ActionConfigFor(context.Background(), owner)
			g.Expect(err).NotTo(HaveOccurred())
			theirs, err := helmclient.DefaultPostRendererFunc(mapper, actionConfig.KubeClient, owner).
				Run(bytes.NewBuffer(append(manifest, kept...)))
			g.Expect(err).NotTo(HaveOccurred())
			ours, err := owned(objs, owner)
			g.Expect(err).NotTo(HaveOccurred())

			want, got := documents(g, theirs.Bytes()), documents(g, ours.Bytes())
			g.Expect(got).To(HaveLen(len(want)))
			refs, annotated := 0, 0
			for i := range want {
				g.Expect(got[i].GetOwnerReferences()).To(Equal(want[i].GetOwnerReferences()), "%s %s", want[i].GetKind(), want[i].GetName())
				g.Expect(got[i].GetAnnotations()).To(Equal(want[i].GetAnnotations()), "%s %s", want[i].GetKind(), want[i].GetName())
				g.Expect(equality.Semantic.DeepEqual(typed(g, got[i]), typed(g, want[i]))).To(BeTrue(),
					"%s %s as the API server reads it", want[i].GetKind(), want[i].GetName())
				if len(want[i].GetOwnerReferences()) > 0 {
					refs++
				} else {
					annotated++
				}
			}
			g.Expect(annotated).To(BeNumerically(">=", 1), "the kept ConfigMap names its owner by annotations")
			if settings.NamespacePerInstance {
				g.Expect(refs).To(BeZero(), "nothing of its own namespace is in the Challenge's")
			} else {
				g.Expect(refs).To(Equal(len(want)-1), "all but the kept ConfigMap")
			}
		})
	}
}

// documents parses a YAML stream into its objects.
func documents(g Gomega, stream []byte) []*unstructured.Unstructured {
	r := yamlutil.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		g.Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(doc, &u.Object)).To(Succeed())
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// typed is u as the typed object of its kind, as Helm's builder decodes it.
func typed(g Gomega, u *unstructured.Unstructured) runtime.Object {
	obj, err := clientgoscheme.Scheme.New(u.GroupVersionKind())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)).To(Succeed())
	return obj
}
