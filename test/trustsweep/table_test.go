package trustsweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/test/trusttable"
)

// root is the repository, two levels above this package.
const root = "../.."

// crdFields are every field path of kind's spec and status ("spec.expose.tls.secretName").
func crdFields(t *testing.T, file string) (kind string, fields []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	var walk func(prefix string, s apiextensionsv1.JSONSchemaProps)
	walk = func(prefix string, s apiextensionsv1.JSONSchemaProps) {
		fields = append(fields, prefix)
		if s.Items != nil && s.Items.Schema != nil {
			s = *s.Items.Schema
		}
		for name, p := range s.Properties {
			walk(prefix+"."+name, p)
		}
	}
	top := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, part := range []string{"spec", "status"} {
		walk(part, top.Properties[part])
	}
	return crd.Spec.Names.Kind, fields
}

// routes are every "METHOD /path" of the instancer's OpenAPI description.
func routes(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "internal", "instancer", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if slices.Contains([]string{"get", "put", "post", "patch", "delete"}, method) {
				out = append(out, strings.ToUpper(method)+" "+path)
			}
		}
	}
	return out
}

// covers tells whether a row's path (after its kind) is field or one of
// its parents.
func covers(rowPath, field string) bool {
	return field == rowPath || strings.HasPrefix(field, rowPath+".")
}

// TestEveryFieldAndRouteHasItsTier: each field of the Challenge and
// ChallengeTemplate CRDs and each route of the instancer is placed by a row
// of docs/security.md's table, with a known tier and a bound; each row
// names a field or route that exists, once.
func TestEveryFieldAndRouteHasItsTier(t *testing.T) {
	g := NewWithT(t)
	rows, err := trusttable.Read(root)
	g.Expect(err).NotTo(HaveOccurred())
	seen := map[string]bool{}
	for _, r := range rows {
		g.Expect(seen[r.What]).To(BeFalse(), "%s placed twice", r.What)
		seen[r.What] = true
		g.Expect(trusttable.Tiers).To(ContainElement(r.Tier), "%s: tier %q", r.What, r.Tier)
		g.Expect(strings.TrimSpace(r.Bound)).NotTo(BeEmpty(), "%s says what bounds it", r.What)
	}

	fieldsByKind := map[string][]string{}
	for _, file := range []string{"ctf.challenge-operator.io_challenges.yaml", "ctf.challenge-operator.io_challengetemplates.yaml"} {
		kind, fields := crdFields(t, file)
		fieldsByKind[kind] = fields
	}
	allRoutes := routes(t)
	for _, r := range rows {
		kind, path, _ := strings.Cut(r.What, " ")
		switch {
		case slices.Contains(allRoutes, r.What):
		case strings.HasPrefix(path, "metadata."):
			g.Expect(fieldsByKind).To(HaveKey(kind), "%s: a kind of the CRDs", r.What)
			g.Expect([]string{"metadata.finalizers", "metadata.labels", "metadata.annotations"}).To(ContainElement(path), "%s: a field of the object's metadata", r.What)
		default:
			g.Expect(fieldsByKind[kind]).To(ContainElement(path), "%s names no field of the CRDs nor route of openapi.json", r.What)
		}
	}
	for kind, fields := range fieldsByKind {
		for _, field := range fields {
			if field == "spec" || field == "status" {
				continue
			}
			placed := slices.ContainsFunc(rows, func(r trusttable.Row) bool {
				k, path, _ := strings.Cut(r.What, " ")
				return k == kind && covers(path, field)
			})
			g.Expect(placed).To(BeTrue(), "%s %s has no row in docs/security.md's table of who writes each field", kind, field)
		}
	}
	for _, route := range allRoutes {
		g.Expect(seen[route]).To(BeTrue(), "%s has no row in docs/security.md's table of who writes each field and route", route)
	}
}
