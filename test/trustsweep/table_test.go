package trustsweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// root is the repository, two levels above this package.
const root = "../.."

// tiers are who may write a field or call a route, from the admin down.
var tiers = []string{"admin", "organiser", "platform", "team", "operator", "anyone"}

// row is one line of the table: a field ("Kind path") or a route
// ("METHOD /path"), its tier and its bound.
type row struct{ what, tier, bound string }

// readTable reads docs/security.md's table between its markers.
func readTable(t *testing.T) []row {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- trust-table:begin -->")
	body, _, ok2 := strings.Cut(rest, "<!-- trust-table:end -->")
	if !ok || !ok2 {
		t.Fatal("docs/security.md has no trust table between its markers")
	}
	cell := regexp.MustCompile("^`([^`]+)`$")
	var rows []row
	for _, line := range strings.Split(strings.TrimSpace(body), "\n")[2:] { // after the header and its rule
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 3 {
			t.Fatalf("a row of three cells: %q", line)
		}
		m := cell.FindStringSubmatch(cells[0])
		if m == nil {
			t.Fatalf("a row names its field or route in backquotes: %q", line)
		}
		rows = append(rows, row{what: m[1], tier: cells[1], bound: cells[2]})
	}
	return rows
}

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
	rows := readTable(t)
	seen := map[string]bool{}
	for _, r := range rows {
		g.Expect(seen[r.what]).To(BeFalse(), "%s placed twice", r.what)
		seen[r.what] = true
		g.Expect(tiers).To(ContainElement(r.tier), "%s: tier %q", r.what, r.tier)
		g.Expect(strings.TrimSpace(r.bound)).NotTo(BeEmpty(), "%s says what bounds it", r.what)
	}

	fieldsByKind := map[string][]string{}
	for _, file := range []string{"ctf.challenge-operator.io_challenges.yaml", "ctf.challenge-operator.io_challengetemplates.yaml"} {
		kind, fields := crdFields(t, file)
		fieldsByKind[kind] = fields
	}
	allRoutes := routes(t)
	for _, r := range rows {
		kind, path, _ := strings.Cut(r.what, " ")
		switch {
		case slices.Contains(allRoutes, r.what):
		case strings.HasPrefix(path, "metadata."):
			g.Expect(fieldsByKind).To(HaveKey(kind), "%s: a kind of the CRDs", r.what)
			g.Expect([]string{"metadata.finalizers", "metadata.labels", "metadata.annotations"}).To(ContainElement(path), "%s: a field of the object's metadata", r.what)
		default:
			g.Expect(fieldsByKind[kind]).To(ContainElement(path), "%s names no field of the CRDs nor route of openapi.json", r.what)
		}
	}
	for kind, fields := range fieldsByKind {
		for _, field := range fields {
			if field == "spec" || field == "status" {
				continue
			}
			placed := slices.ContainsFunc(rows, func(r row) bool {
				k, path, _ := strings.Cut(r.what, " ")
				return k == kind && covers(path, field)
			})
			g.Expect(placed).To(BeTrue(), "%s %s has no row in docs/security.md's table of who writes each field", kind, field)
		}
	}
	for _, route := range allRoutes {
		g.Expect(seen[route]).To(BeTrue(), "%s has no row in docs/security.md's table of who writes each field and route", route)
	}
}
