package doclinks

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
)

// root is the repository, from this package's directory.
const root = "../.."

// pages are the Markdown files whose links are checked: the README, the
// install chart's, and every page of docs/ (the benchmark history included).
var pages = []string{"README.md", "dist/chart/README.md", "docs/*.md", "docs/history/*.md"}

// TestEveryRelativeLinkResolves fails naming each relative link of the
// repository's Markdown whose file or heading is gone.
func TestEveryRelativeLinkResolves(t *testing.T) {
	g := NewWithT(t)
	var files []string
	for _, pattern := range pages {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(matches).NotTo(BeEmpty(), pattern)
		for _, m := range matches {
			rel, err := filepath.Rel(root, m)
			g.Expect(err).NotTo(HaveOccurred())
			files = append(files, filepath.ToSlash(rel))
		}
	}
	g.Expect(files).To(ContainElements("docs/guide.md", "docs/api.md", "docs/architecture.md", "docs/operations.md"))
	var problems []string
	links := 0
	for _, f := range files {
		p, err := Check(root, f)
		g.Expect(err).NotTo(HaveOccurred())
		problems = append(problems, p...)
		b, err := os.ReadFile(filepath.Join(root, f))
		g.Expect(err).NotTo(HaveOccurred())
		links += len(Links(string(b)))
	}
	g.Expect(links).To(BeNumerically(">", 50), "the pages link to each other")
	g.Expect(problems).To(BeEmpty(), "links that do not resolve")
}

func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Templates, expiry, quotas, flags, isolation":         "templates-expiry-quotas-flags-isolation",
		"TCP over TLS by name, and HTTP, through a Gateway":   "tcp-over-tls-by-name-and-http-through-a-gateway",
		"The instance's address under another name":           "the-instances-address-under-another-name",
		"Security profiles: who may grant what":               "security-profiles-who-may-grant-what",
		"Installing: Helm, OLM bundle, kustomize, image":      "installing-helm-olm-bundle-kustomize-image",
		"`spec.values` and **typed** fields":                  "specvalues-and-typed-fields",
		"A [link](x.md) in it":                                "a-link-in-it",
		"ChallengeOperatorDown":                               "challengeoperatordown",
		"snake_case and  two spaces":                          "snake_case-and--two-spaces",
		"Warm pools: a burst of claims":                       "warm-pools-a-burst-of-claims",
		"Résumé — 2026-11-23 (5a18802)":                       "résumé--2026-11-23-5a18802",
		"Resident instances: one operator at rest":            "resident-instances-one-operator-at-rest",
		"Fresh installs: ours against the floor <sup>1</sup>": "fresh-installs-ours-against-the-floor-1",
	} {
		NewWithT(t).Expect(Slug(text)).To(Equal(want), text)
	}
}

func TestLinks(t *testing.T) {
	g := NewWithT(t)
	doc := "# T\n" +
		"See [a](a.md#x) and ![pic](p.png \"title\"), [b](<b c.md>).\n" +
		"Not `[code](c.md)` here.\n" +
		"```sh\n[fenced](f.md)\n```\n" +
		"  ~~~\n  [fenced too](g.md)\n  ~~~\n" +
		"[ref]: r.md\n" +
		"<img src=\"i.png\"> <a href=\"https://x\">x</a>\n"
	var targets []string
	for _, l := range Links(doc) {
		targets = append(targets, l.Target)
	}
	g.Expect(targets).To(Equal([]string{"a.md#x", "p.png", "b c.md", "r.md", "i.png", "https://x"}))
	g.Expect(Links(doc)[0].Line).To(Equal(2))
}

func TestAnchors(t *testing.T) {
	g := NewWithT(t)
	anchors := Anchors("# Status\n## Status\n### Status #\n```\n# not a heading\n```\n<a id=\"kept\"></a>\n#hashtag\n")
	g.Expect(anchors).To(Equal(map[string]bool{"status": true, "status-1": true, "status-2": true, "kept": true}))
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		NewWithT(t).Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
		NewWithT(t).Expect(os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)).To(Succeed())
	}
	write("docs/guide.md", "# Guide\n## Flags\n")
	write("main.go", "package main\n")
	for _, tt := range []struct {
		link, problem string
	}{
		{link: "docs/guide.md"},
		{link: "docs/guide.md#flags"},
		{link: "docs/"},
		{link: "main.go#L1"},
		{link: "#readme"},
		{link: "https://example.org/missing.md#nowhere"},
		{link: "mailto:ctf@example.org"},
		{link: "docs/guide.md#pools", problem: "docs/guide.md has no heading whose anchor is #pools"},
		{link: "#nowhere", problem: "README.md has no heading whose anchor is #nowhere"},
		{link: "docs/gone.md", problem: "no such file or directory"},
		{link: "../outside.md", problem: "outside the repository"},
		{link: "/docs/guide.md", problem: "a path from the site's root"},
		{link: "main.go#main", problem: "not Markdown"},
	} {
		t.Run(tt.link, func(t *testing.T) {
			g := NewWithT(t)
			write("README.md", "# Readme\n\n[it]("+tt.link+")\n")
			problems, err := Check(dir, "README.md")
			g.Expect(err).NotTo(HaveOccurred())
			if tt.problem == "" {
				g.Expect(problems).To(BeEmpty())
				return
			}
			g.Expect(problems).To(HaveLen(1))
			g.Expect(problems[0]).To(And(HavePrefix("README.md:3: "+tt.link+": "), ContainSubstring(tt.problem)))
		})
	}
	t.Run("relative to the linking page", func(t *testing.T) {
		g := NewWithT(t)
		write("docs/other.md", "[back](../README.md#readme) [guide](guide.md#flags) [wrong](docs/guide.md)\n")
		write("README.md", "# Readme\n")
		problems, err := Check(dir, "docs/other.md")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(problems).To(HaveLen(1))
		g.Expect(slices.ContainsFunc(problems, func(p string) bool { return p == "docs/other.md:1: docs/guide.md: no such file or directory" })).To(BeTrue(), problems)
	})
}
