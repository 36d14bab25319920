package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/challenge-operator/challenge-operator/hack/internal/marker"
)

// TestAPIReferenceIsCurrent fails when a doc comment, a marker or a field of
// the API changed without `make manifests` writing docs/api.md again.
func TestAPIReferenceIsCurrent(t *testing.T) {
	g := NewWithT(t)
	want, err := generate("../../config/crd/bases")
	g.Expect(err).NotTo(HaveOccurred())
	got, err := os.ReadFile("../../docs/api.md")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(want), "docs/api.md is stale: run make manifests")
	for _, field := range []string{"`spec.participant`", "`spec.lifetime.maxRenewals`", "`status.phase`", "`spec.components[].probes`"} {
		g.Expect(want).To(ContainSubstring("| "+field+" |"), "the reference has a row for %s", field)
	}
}

// TestFlagsAreCurrent fails when a flag of the operator or the instancer,
// its default or its help changed without `make manifests` writing the
// operations page's flags part again.
func TestFlagsAreCurrent(t *testing.T) {
	g := NewWithT(t)
	page, err := os.ReadFile("../../docs/operations.md")
	g.Expect(err).NotTo(HaveOccurred())
	want, err := withFlags(string(page))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(page)).To(Equal(want), "docs/operations.md's flags are stale: run make manifests")
	for _, f := range []string{"`--max-pod-security` | `baseline`", "`--pool-namespace` |", "`--starts-per-minute` | `3`"} {
		g.Expect(want).To(ContainSubstring("| "+f), "the flags have a row for %s", f)
	}
}

func TestRunCheck(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	out, page := filepath.Join(dir, "api.md"), filepath.Join(dir, "operations.md")
	g.Expect(os.WriteFile(page, []byte("# Operations\n\n"+marker.Section(flagsPart, "")+"\nAfter.\n"), 0o644)).To(Succeed())
	g.Expect(run("../../config/crd/bases", out, page, false)).To(Succeed())
	g.Expect(run("../../config/crd/bases", out, page, true)).To(Succeed())
	b, err := os.ReadFile(page)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(And(HavePrefix("# Operations\n\n<!-- BEGIN flags"), ContainSubstring("| `--max-instances` |"), HaveSuffix("-->\nAfter.\n")))

	g.Expect(os.WriteFile(out, []byte("stale"), 0o644)).To(Succeed())
	g.Expect(run("../../config/crd/bases", out, page, true)).To(MatchError(ContainSubstring("api.md is stale: run make manifests")))
	b, err = os.ReadFile(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal("stale"), "-check writes nothing")

	g.Expect(run("../../config/crd/bases", out, page, false)).To(Succeed())
	g.Expect(os.WriteFile(page, []byte("no markers"), 0o644)).To(Succeed())
	g.Expect(run("../../config/crd/bases", out, page, true)).To(MatchError(ContainSubstring("want exactly one")))
	g.Expect(run(dir, out, page, false)).To(MatchError(ContainSubstring("no CRDs in")))
}

func TestTypeCell(t *testing.T) {
	str := func(s schema) *schema { s.Type = "string"; return &s }
	for _, tt := range []struct {
		name string
		s    *schema
		want string
	}{
		{name: "plain", s: str(schema{}), want: "string"},
		{name: "format", s: str(schema{Format: "date-time"}), want: "string (date-time)"},
		{name: "bounded integer", s: &schema{Type: "integer", Minimum: ptr.To(1.0), Maximum: ptr.To(65535.0)}, want: "integer; 1 to 65535"},
		{name: "exclusive", s: &schema{Type: "number", Minimum: ptr.To(0.0), ExclusiveMinimum: true}, want: "number; above 0"},
		{name: "at most", s: &schema{Type: "integer", Maximum: ptr.To(8.0)}, want: "integer; at most 8"},
		{name: "length", s: str(schema{MinLength: ptr.To[int64](1), MaxLength: ptr.To[int64](63)}), want: "string; 1 to 63 characters"},
		{name: "one character", s: str(schema{MaxLength: ptr.To[int64](1)}), want: "string; at most 1 character"},
		{name: "enum", s: str(schema{Enum: []apiextensionsv1.JSON{{Raw: []byte(`"TCP"`)}, {Raw: []byte(`"UDP"`)}}}), want: "string; one of `TCP`, `UDP`"},
		{name: "enum narrowed by allOf", s: str(schema{AllOf: []schema{
			{Enum: []apiextensionsv1.JSON{{Raw: []byte(`"ClusterIP"`)}, {Raw: []byte(`"Ingress"`)}, {Raw: []byte(`"TLSRoute"`)}}},
			{Enum: []apiextensionsv1.JSON{{Raw: []byte(`"TLSRoute"`)}, {Raw: []byte(`"Ingress"`)}}},
		}}), want: "string; one of `Ingress`, `TLSRoute`"},
		{name: "list of bounded strings", s: &schema{Type: "array", MaxItems: ptr.To[int64](8), Items: &apiextensionsv1.JSONSchemaPropsOrArray{
			Schema: str(schema{MaxLength: ptr.To[int64](253)})}}, want: "[]string; at most 8 items; each at most 253 characters"},
		{name: "keyed list", s: &schema{Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"name"},
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &schema{Type: "object"}}}, want: "[]object; keyed by `name`"},
		{name: "map", s: &schema{Type: "object", MaxProperties: ptr.To[int64](32), AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{
			Schema: str(schema{MaxLength: ptr.To[int64](1024)})}}, want: "map[string]string; at most 32 entries; each value at most 1024 characters"},
		{name: "int or string", s: &schema{XIntOrString: true}, want: "int or string"},
		{name: "untyped", s: &schema{}, want: "any"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(typeCell(tt.s)).To(Equal(tt.want))
		})
	}
}

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"One line.":             "One line.",
		"Joined\nlines.":        "Joined lines.",
		"First.\n\nSecond.":     "First.<br><br>Second.",
		"A list:\n- one\n- two": "A list:<br>- one<br>- two",
		"Named <challenge>-flag, a|b, *.svc, [x](y).":  `Named &lt;challenge&gt;-flag, a\|b, \*.svc, \[x\](y).`,
		"CHALLENGE_HOST and _URL, snake_case_.":        `CHALLENGE_HOST and \_URL, snake_case\_.`,
		"Code `<b>|*_x_*` is kept, but its pipe.":      "Code `<b>\\|*_x_*` is kept, but its pipe.",
		"An odd ` backtick & a \\ backslash.":          "An odd ` backtick &amp; a \\\\ backslash.",
		"  \n\nTrimmed.\n\n":                           "Trimmed.",
		"1. numbered\n2. items":                        "1. numbered<br>2. items",
		"~~not struck~~":                               `\~\~not struck\~\~`,
		"Ends with a rule's words (e.g. \"30m\").\n\n": `Ends with a rule's words (e.g. "30m").`,
	} {
		NewWithT(t).Expect(cell(in)).To(Equal(want), in)
	}
}

func TestCode(t *testing.T) {
	g := NewWithT(t)
	g.Expect(code("ClusterIP")).To(Equal("`ClusterIP`"))
	g.Expect(code("a|b")).To(Equal("`a\\|b`"))
	g.Expect(code("self.x != `y`")).To(Equal("`` self.x != `y` ``"))
	g.Expect(literal([]byte(`{"a": 1}`))).To(Equal(`{"a":1}`))
	g.Expect(literal([]byte(`"TCP"`))).To(Equal("TCP"))
	g.Expect(literal([]byte(`3`))).To(Equal("3"))
}

// object is a struct schema of the given fields.
func object(description string, fields map[string]schema, required ...string) schema {
	return schema{Type: "object", Description: description, Properties: fields, Required: required}
}

func TestAStructMetAgainIsWrittenOnceAtItsShallowestPath(t *testing.T) {
	g := NewWithT(t)
	probe := object("", map[string]schema{"path": {Type: "string", Description: "Path probed."}}, "path")
	components := schema{Type: "array", Description: "Components.", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptr.To(object("Component is one.",
		map[string]schema{"probe": withDescription(probe, "The component's probe.")}))}}
	t.Run("the primary's, though the component's comes first", func(t *testing.T) {
		spec := object("", map[string]schema{"components": components, "probe": withDescription(probe, "The primary's probe.")})
		var b strings.Builder
		newWalker(&b, "spec", &spec).children("spec", &spec)
		NewWithT(t).Expect(b.String()).To(Equal("" +
			"| `spec.components` | []object |  |  | Components.<br><br>Component is one. |\n" +
			"| `spec.components[].probe` | object |  |  | The component's probe. Same fields as `spec.probe`. |\n" +
			"| `spec.probe` | object |  |  | The primary's probe. |\n" +
			"| `spec.probe.path` | string | yes |  | Path probed. |\n"))
	})
	t.Run("the first of two as deep", func(t *testing.T) {
		spec := object("", map[string]schema{"liveness": probe, "readiness": probe})
		var b strings.Builder
		newWalker(&b, "spec", &spec).children("spec", &spec)
		NewWithT(t).Expect(b.String()).To(Equal("" +
			"| `spec.liveness` | object |  |  |  |\n" +
			"| `spec.liveness.path` | string | yes |  | Path probed. |\n" +
			"| `spec.readiness` | object |  |  | Same fields as `spec.liveness`. |\n"))
	})
	g.Expect(depth("spec.components[].probe")).To(Equal(3))
}

// withDescription is s described so.
func withDescription(s schema, description string) schema {
	s.Description = description
	return s
}

func TestDescriptionCarriesRulesAndTheItemsType(t *testing.T) {
	g := NewWithT(t)
	item := object("Port is one port.", nil)
	item.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.port > 0"}}
	s := &schema{Type: "array", Description: "Ports.", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item},
		XValidations: apiextensionsv1.ValidationRules{{Rule: "x", Message: "names must be unique"}, {Rule: "y", MessageExpression: "'bad ' + self"}}}
	g.Expect(description(s, &item)).To(Equal("Ports.<br><br>Port is one port.<br><br>Rules: names must be unique; `'bad ' + self`; `self.port > 0`."))
}
