package main

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// layer is one tier of the architecture. MayImport lists the layers its
// packages may import besides their own: the rule the picture states, checked
// on every run, so that a new import across the layers is a decision made in
// this file rather than a drift nobody saw.
type layer struct {
	ID        string
	Short     string
	Title     string
	Product   bool
	MayImport []string
}

// The layers' ids, as the picture names its nodes.
const (
	apiLayer        = "api"
	coreLayer       = "core"
	supportLayer    = "support"
	engineLayer     = "engine"
	servingLayer    = "serving"
	portingLayer    = "porting"
	commandsLayer   = "commands"
	generatorsLayer = "generators"
	testsLayer      = "tests"
	hackLayer       = "hack"
)

// layers are the tiers, in the order the architecture page lists them, each
// able to import only layers listed before it. No product layer lists tests
// or hack, so a product package that imports a test helper fails the run.
var layers = []layer{
	{ID: apiLayer, Short: "API", Title: "API types", Product: true},
	{ID: coreLayer, Short: "Core", Title: "Core: an instance's identity, status, security, flag, endpoint and policy", Product: true,
		MayImport: []string{apiLayer}},
	{ID: supportLayer, Short: "Support", Title: "Support shared by the processes: metrics, cache reads, serving, manifests", Product: true,
		MayImport: []string{apiLayer}},
	{ID: engineLayer, Short: "Engine", Title: "Engine: translation, Helm, pools, controllers, admission", Product: true,
		MayImport: []string{apiLayer, coreLayer, supportLayer}},
	{ID: servingLayer, Short: "Serving", Title: "Serving side: the participants' instancer and its tokens", Product: true,
		MayImport: []string{apiLayer, coreLayer, supportLayer}},
	{ID: portingLayer, Short: "Porting", Title: "Porting: challenge definitions into templates", Product: true,
		MayImport: []string{apiLayer, coreLayer, supportLayer, engineLayer}},
	{ID: commandsLayer, Short: "Commands", Title: "Commands: one package per binary or subcommand, and main", Product: true,
		MayImport: []string{apiLayer, coreLayer, supportLayer, engineLayer, servingLayer, portingLayer}},
	{ID: generatorsLayer, Short: "Generators", Title: "Generators of what ships beside the binary: the install chart, the OLM bundle", Product: true,
		MayImport: []string{apiLayer, coreLayer, supportLayer, engineLayer, servingLayer, commandsLayer}},
	{ID: testsLayer, Short: "Tests", Title: "Test suites and their helpers",
		MayImport: []string{apiLayer, coreLayer, supportLayer, engineLayer, servingLayer, portingLayer, commandsLayer, generatorsLayer}},
	{ID: hackLayer, Short: "Tools", Title: "Development tools: the generators' commands, the benchmark, this layout",
		MayImport: []string{apiLayer, coreLayer, supportLayer, engineLayer, servingLayer, portingLayer, commandsLayer, generatorsLayer, testsLayer}},
}

// placed puts the packages that no rule of placeIn places, by their path in
// the module ("." is main). A package moved or added where no rule reaches
// must be added here: the run fails naming it.
var placed = map[string]string{
	"api/v1alpha1": apiLayer,

	"internal/identity":        coreLayer,
	"internal/lifecycle":       coreLayer,
	"internal/security":        coreLayer,
	"internal/ctfflag":         coreLayer,
	"internal/organisersecret": coreLayer,
	"internal/helmobject":      coreLayer,
	"internal/flagtag":         coreLayer,
	"internal/endpoint":        coreLayer,
	"internal/policy":          coreLayer,

	"internal/metrics":     supportLayer,
	"internal/readthrough": supportLayer,
	"internal/serving":     supportLayer,
	"internal/manifests":   supportLayer,

	"internal/admission":                    engineLayer,
	"internal/containment":                  engineLayer,
	"internal/solvercheck":                  engineLayer,
	"internal/values":                       engineLayer,
	"internal/render":                       engineLayer,
	"internal/pool":                         engineLayer,
	"internal/action":                       engineLayer,
	"internal/controller":                   engineLayer,
	"internal/controller/challenge":         engineLayer,
	"internal/controller/challengepool":     engineLayer,
	"internal/controller/challengetemplate": engineLayer,
	"internal/policyhelm":                   engineLayer,
	"internal/webhook":                      engineLayer,
	"internal/operator":                     engineLayer,
	"internal/operator/nsperinstance":       engineLayer,
	"internal/selfmonitor":                  engineLayer,

	"internal/instancer":    servingLayer,
	"internal/token":        servingLayer,
	"internal/platformauth": servingLayer,
	"internal/proofofwork":  servingLayer,

	"internal/importer": portingLayer,

	".": commandsLayer,

	"internal/bundle":       generatorsLayer,
	"internal/installchart": generatorsLayer,
}

// byRule gives the layer of a package from its path in the module alone:
// the test suites and their helpers live under test/, the tools under hack/,
// and a command's package is named for it.
func byRule(rel string) (string, bool) {
	switch {
	case rel == "test" || strings.HasPrefix(rel, "test/"):
		return testsLayer, true
	case strings.HasPrefix(rel, "hack/"):
		return hackLayer, true
	case strings.HasPrefix(rel, "internal/") && strings.HasSuffix(path.Base(rel), "cmd"):
		return commandsLayer, true
	}
	return "", false
}

// placeIn gives the layer of a package by its path in the module: by rule,
// else by the explicit map.
func placeIn(rel string) (string, bool) {
	if id, ok := byRule(rel); ok {
		return id, true
	}
	id, ok := placed[rel]
	return id, ok
}

// layerByID returns the layer with the id, which must exist.
func layerByID(id string) layer {
	i := slices.IndexFunc(layers, func(l layer) bool { return l.ID == id })
	if i < 0 {
		panic(fmt.Sprintf("no layer %q", id))
	}
	return layers[i]
}

// place assigns every package its layer, and fails naming each package
// neither a rule nor the map places, and each entry of the map that names no
// package (moved or removed) or one a rule places already, so that the map
// stays a true list.
func place(pkgs []pkg) error {
	var unplaced []string
	seen := map[string]bool{}
	for i := range pkgs {
		seen[pkgs[i].Rel] = true
		id, ok := placeIn(pkgs[i].Rel)
		if !ok {
			unplaced = append(unplaced, pkgs[i].Rel)
			continue
		}
		pkgs[i].Layer = id
	}
	var stale []string
	for rel := range placed {
		if _, ruled := byRule(rel); ruled || !seen[rel] {
			stale = append(stale, rel)
		}
	}
	slices.Sort(stale)
	var msgs []string
	if len(unplaced) > 0 {
		msgs = append(msgs, fmt.Sprintf("no layer for %s: add each to placed in hack/layout/layers.go (or move it where a rule of placeIn reaches)", strings.Join(unplaced, ", ")))
	}
	if len(stale) > 0 {
		msgs = append(msgs, fmt.Sprintf("placed in hack/layout/layers.go names %s, which a rule places already or which is no package of the module: remove or rename it", strings.Join(stale, ", ")))
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// edge is one import across two layers.
type edge struct{ From, To string }

// layerEdges counts the imports between packages of different layers.
func layerEdges(pkgs []pkg) map[edge]int {
	layerOf := map[string]string{}
	for _, p := range pkgs {
		layerOf[p.Rel] = p.Layer
	}
	edges := map[edge]int{}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			to, ok := layerOf[imp]
			if ok && to != p.Layer {
				edges[edge{p.Layer, to}]++
			}
		}
	}
	return edges
}

// checkLayering fails naming every import, by the code of a package rather
// than its tests, that its layer may not make: upwards, sideways to a layer
// not listed, or into a test helper. Tests of a product package may import
// test helpers (an integration test starts the harness).
func checkLayering(pkgs []pkg) error {
	layerOf := map[string]string{}
	for _, p := range pkgs {
		layerOf[p.Rel] = p.Layer
	}
	var bad []string
	for _, p := range pkgs {
		allowed := layerByID(p.Layer).MayImport
		for _, imp := range p.Imports {
			to, ok := layerOf[imp]
			if !ok || to == p.Layer || slices.Contains(allowed, to) {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s)", p.Rel, p.Layer, imp, to))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("imports across the layers that hack/layout/layers.go does not allow (move the code, or allow the edge there on purpose): %s", strings.Join(bad, "; "))
	}
	return nil
}
