// Package manifests reads Kubernetes manifests the way the project's
// generators and tests need them: a stream of YAML documents as objects, and
// a kustomization built as `kubectl apply -k` would build it.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Decode reads a stream of YAML (or JSON) documents, skipping empty ones.
func Decode(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding manifests: %w", err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// Kustomize builds the kustomization in dir with the kustomize library, as
// `kubectl apply -k dir` would, and returns its objects as Decode reads them.
func Kustomize(dir string) ([]*unstructured.Unstructured, error) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", dir, err)
	}
	data, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", dir, err)
	}
	return Decode(bytes.NewReader(data))
}
