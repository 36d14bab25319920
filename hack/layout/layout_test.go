package main

import (
	"maps"
	"os"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
)

func TestPlaceIn(t *testing.T) {
	for _, tt := range []struct {
		rel, want string
	}{
		{".", "commands"},
		{"api/v1alpha1", "api"},
		{"internal/identity", "core"},
		{"internal/values", "engine"},
		{"internal/instancer", "serving"},
		{"internal/installchart", "generators"},
		{"internal/admission", "engine"},
		// The rules: the suites and their helpers under test/, the tools,
		// commands by name, whether or not the map knows them.
		{"test/faults", "tests"},
		{"test/e2e/helpers", "tests"},
		{"test/controlplane/cmd/local-cluster", "tests"},
		{"hack/newtool", "hack"},
		{"internal/newcmd", "commands"},
		// Neither.
		{"internal/newthing", ""},
		{"testdata/x", ""},
		{"internal/cmdline", ""},
	} {
		t.Run(tt.rel, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := placeIn(tt.rel)
			g.Expect(ok).To(Equal(tt.want != ""))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// modulePkgs is one package for each entry of the map, plus the extra ones.
func modulePkgs(extra ...string) []pkg {
	var pkgs []pkg
	for _, rel := range slices.Concat(slices.Sorted(maps.Keys(placed)), extra) {
		pkgs = append(pkgs, pkg{Rel: rel})
	}
	return pkgs
}

func TestPlace(t *testing.T) {
	t.Run("places every package of the map and of the rules", func(t *testing.T) {
		g := NewWithT(t)
		pkgs := modulePkgs("internal/tokencmd", "test/e2e")
		g.Expect(place(pkgs)).To(Succeed())
		for _, p := range pkgs {
			g.Expect(p.Layer).NotTo(BeEmpty(), p.Rel)
		}
	})
	t.Run("fails naming a package no rule nor the map places", func(t *testing.T) {
		g := NewWithT(t)
		err := place(modulePkgs("internal/newthing", "internal/other"))
		g.Expect(err).To(MatchError(And(
			ContainSubstring("no layer for internal/newthing, internal/other"),
			ContainSubstring("hack/layout/layers.go"))))
	})
	t.Run("fails naming an entry of the map whose package moved", func(t *testing.T) {
		g := NewWithT(t)
		pkgs := slices.DeleteFunc(modulePkgs("test/manifests"), func(p pkg) bool { return p.Rel == "internal/manifests" })
		err := place(pkgs)
		g.Expect(err).To(MatchError(ContainSubstring("names internal/manifests, which")))
		g.Expect(err.Error()).NotTo(ContainSubstring("no layer"))
	})
}

func TestCheckLayering(t *testing.T) {
	base := []pkg{
		{Rel: "api/v1alpha1", Layer: "api"},
		{Rel: "internal/identity", Layer: "core", Imports: []string{"api/v1alpha1"}},
		{Rel: "internal/lifecycle", Layer: "core", Imports: []string{"api/v1alpha1"}},
		{Rel: "internal/values", Layer: "engine", Imports: []string{"internal/identity", "api/v1alpha1"}},
		{Rel: "internal/instancer", Layer: "serving"},
		{Rel: "test/harness", Layer: "tests", Imports: []string{"internal/values"}},
		{Rel: "hack/bench", Layer: "hack", Imports: []string{"test/harness", "internal/instancer"}},
	}
	for _, tt := range []struct {
		name string
		add  pkg
		err  string
	}{
		{name: "downwards and within a layer", add: pkg{Rel: "internal/security", Layer: "core", Imports: []string{"internal/lifecycle", "api/v1alpha1"}}},
		{name: "a command imports the engine", add: pkg{Rel: "internal/operatorcmd", Layer: "commands", Imports: []string{"internal/values"}}},
		{name: "core imports the engine", add: pkg{Rel: "internal/security", Layer: "core", Imports: []string{"internal/values"}},
			err: "internal/security (core) imports internal/values (engine)"},
		{name: "the API imports core", add: pkg{Rel: "api/v1beta1", Layer: "api", Imports: []string{"internal/identity"}},
			err: "api/v1beta1 (api) imports internal/identity (core)"},
		{name: "serving imports the engine, a layer beside it", add: pkg{Rel: "internal/token", Layer: "serving", Imports: []string{"internal/values"}},
			err: "internal/token (serving) imports internal/values (engine)"},
		{name: "a product package imports a test helper", add: pkg{Rel: "internal/pool", Layer: "engine", Imports: []string{"test/harness"}},
			err: "internal/pool (engine) imports test/harness (tests)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkLayering(append(slices.Clone(base), tt.add))
			if tt.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
		})
	}
}

func TestLayersAreADrawableOrder(t *testing.T) {
	g := NewWithT(t)
	for i, l := range layers {
		for _, id := range l.MayImport {
			below := slices.IndexFunc(layers[:i], func(o layer) bool { return o.ID == id })
			g.Expect(below).NotTo(Equal(-1), "%s may import %s, which is not listed before it", l.ID, id)
		}
		if l.Product {
			g.Expect(l.MayImport).NotTo(ContainElements("tests", "hack"), l.ID)
		}
	}
}

func TestStrip(t *testing.T) {
	for in, want := range map[string]string{
		"Package identity names an instance.":         "names an instance.",
		"Package faults_test runs the binary.":        "runs the binary.",
		"Command bench measures a burst.":             "measures a burst.",
		"Package installchart writes the chart from:": "writes the chart from.",
		"Packages differ.":                            "Packages differ.",
	} {
		NewWithT(t).Expect(strip(in)).To(Equal(want), in)
	}
}

// TestArchitectureIsCurrent fails when a package, its doc comment or an
// import between layers changed without `make docs`, or when the layers are
// broken: the architecture page's picture and tables are the module's.
func TestArchitectureIsCurrent(t *testing.T) {
	g := NewWithT(t)
	page, err := os.ReadFile("../../docs/architecture.md")
	g.Expect(err).NotTo(HaveOccurred())
	updated, err := generate("../..", "docs/architecture.md", string(page))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(updated).To(Equal(string(page)), "docs/architecture.md is stale: run make docs")
}

func TestToRoot(t *testing.T) {
	for doc, want := range map[string]string{"README.md": "", "docs/architecture.md": "../", "docs/a/b.md": "../../"} {
		NewWithT(t).Expect(toRoot(doc)).To(Equal(want), doc)
	}
}
