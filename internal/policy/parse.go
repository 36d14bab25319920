package policy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// typeKey is an allowlisted apiVersion and kind, compared exactly.
type typeKey struct{ apiVersion, kind string }

// kindSpec is what the gate knows of an allowlisted kind.
type kindSpec struct {
	// newObject returns the typed object a document of this kind is decoded into.
	newObject func() metav1.Object
	// clusterScoped kinds carry no namespace.
	clusterScoped bool
	// ownNamespace kinds only an instance with a namespace of its own may create.
	ownNamespace bool
	// perComponent kinds are rendered for each component, named ComponentObject.
	perComponent bool
}

// kinds is the allowlist: nothing else may be rendered.
var kinds = map[typeKey]kindSpec{
	{"apps/v1", "Deployment"}:                     {newObject: newOf[appsv1.Deployment], perComponent: true},
	{"v1", "Service"}:                             {newObject: newOf[corev1.Service], perComponent: true},
	{"v1", "ServiceAccount"}:                      {newObject: newOf[corev1.ServiceAccount]},
	{"v1", "Secret"}:                              {newObject: newOf[corev1.Secret]},
	{"v1", "ConfigMap"}:                           {newObject: newOf[corev1.ConfigMap]},
	{"networking.k8s.io/v1", "NetworkPolicy"}:     {newObject: newOf[networkingv1.NetworkPolicy], perComponent: true},
	{"networking.k8s.io/v1", "Ingress"}:           {newObject: newOf[networkingv1.Ingress], perComponent: true},
	{"gateway.networking.k8s.io/v1", "TLSRoute"}:  {newObject: newOf[gatewayv1.TLSRoute], perComponent: true},
	{"gateway.networking.k8s.io/v1", "HTTPRoute"}: {newObject: newOf[gatewayv1.HTTPRoute], perComponent: true},
	{"v1", "Namespace"}:                           {newObject: newOf[corev1.Namespace], clusterScoped: true, ownNamespace: true},
	{"v1", "ResourceQuota"}:                       {newObject: newOf[corev1.ResourceQuota], ownNamespace: true},
	{"v1", "LimitRange"}:                          {newObject: newOf[corev1.LimitRange], ownNamespace: true},
}

// newOf returns a new, empty typed object of an allowlisted kind.
func newOf[T any, PT interface {
	*T
	metav1.Object
}]() metav1.Object {
	return PT(new(T))
}

// object is one rendered document, decoded.
type object struct {
	kind string
	spec kindSpec
	obj  metav1.Object
	// raw is the document as the API server reads it, for the fields its Go type has no rule for.
	raw map[string]any
}

// violation builds a Violation naming this object.
func (o *object) violation(rule, format string, args ...any) *Violation {
	obj := describe(o.kind, o.obj.GetNamespace(), o.obj.GetName())
	return &Violation{Rule: rule, Object: obj, Detail: fmt.Sprintf(format, args...)}
}

// describe names an object as "Kind namespace/name", or "Kind name" when it has no namespace.
func describe(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// head is what every document must say of itself before the gate decodes it as its kind.
type head struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// parse splits manifest into documents as the Kubernetes client Helm applies with does (a line
// "---" separates them) and decodes each non-empty one. A stream that starts like JSON is refused:
// that client would read it as a JSON stream, not as the YAML the gate judged.
func parse(manifest []byte) ([]*object, error) {
	if yamlutil.IsJSONBuffer(manifest) {
		return nil, &Violation{Rule: ruleParse, Object: "document 1", Detail: "a JSON stream, not YAML documents"}
	}
	r := yamlutil.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var objs []*object
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, parseViolation(n, err)
		}
		o, err := decode(n, doc)
		if err != nil {
			return nil, err
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
}

// decode reads one document strictly into its kind's typed object; an empty document is nil.
func decode(n int, doc []byte) (*object, error) {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, parseViolation(n, err)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil, nil
	}
	var h head
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &h); err != nil {
		return nil, parseViolation(n, fmt.Errorf("not a Kubernetes object: %w", err))
	}
	if h.APIVersion == "" || h.Kind == "" || h.Metadata.Name == "" {
		return nil, parseViolation(n, errors.New("apiVersion, kind and metadata.name are required"))
	}
	spec, ok := kinds[typeKey{h.APIVersion, h.Kind}]
	if !ok {
		obj := describe(h.Kind, h.Metadata.Namespace, h.Metadata.Name)
		return nil, &Violation{Rule: ruleKind, Object: obj, Detail: fmt.Sprintf("%s %s is not allowed", h.APIVersion, h.Kind)}
	}
	obj := spec.newObject()
	strict, err := kjson.UnmarshalStrict(data, obj)
	if err = errors.Join(append(strict, err)...); err != nil {
		return nil, parseViolation(n, fmt.Errorf("%s %s: %w", h.Kind, h.Metadata.Name, err))
	}
	var raw map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &raw); err != nil {
		return nil, parseViolation(n, err)
	}
	return &object{kind: h.Kind, spec: spec, obj: obj, raw: raw}, nil
}

// parseViolation refuses a document the gate cannot read as an allowlisted object.
func parseViolation(n int, err error) *Violation {
	return &Violation{Rule: ruleParse, Object: fmt.Sprintf("document %d", n), Detail: err.Error()}
}
