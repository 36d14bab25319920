package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/challenge-operator/challenge-operator/hack/internal/marker"
)

// update rewrites the report's sections from their raw figures, for when the
// report's shape changes: go test ./hack/bench -run TestReportSectionsAreTheirRawFigures -update.
var update = flag.Bool("update", false, "rewrite docs/benchmarks.md's sections from their raw figures")

func TestSectionFor(t *testing.T) {
	for _, tt := range []struct {
		systems  string
		resident bool
		want     string
	}{
		{"floor,kubectl,ours,stock", false, "comparison"},
		{"ours,stock", false, "comparison"},
		{"floor,ours", false, "fresh"},
		{"ours", false, "fresh"},
		{"ours,pooled,pooled:100", false, "pools"},
		{"pooled,instancer", false, "pools"},
		{"instancer:100,stock", false, "pools"},
		{"ours", true, "resident"},
	} {
		NewWithT(t).Expect(sectionFor(strings.Split(tt.systems, ","), tt.resident)).To(Equal(tt.want), tt.systems)
	}
}

func TestParseNamesEachModesOwnFiles(t *testing.T) {
	for _, tt := range []struct {
		args              string
		section, out, raw string
		err               string
	}{
		{args: "", section: "comparison", out: "docs/benchmarks.md", raw: "docs/benchmarks-comparison.json"},
		{args: "-systems floor,ours -idle=false", section: "fresh", out: "docs/benchmarks.md", raw: "docs/benchmarks-fresh.json"},
		{args: "-n 500 -systems ours,pooled", section: "pools", out: "docs/benchmarks.md", raw: "docs/benchmarks-pools.json"},
		{args: "-resident -n 1000", section: "resident", out: "docs/benchmarks.md", raw: "docs/benchmarks-resident.json"},
		{args: "-systems ours -section pools -out /tmp/r.md", section: "pools", out: "/tmp/r.md", raw: "/tmp/benchmarks-pools.json"},
		{args: "-json x.json", section: "comparison", out: "docs/benchmarks.md", raw: "x.json"},
		{args: "-section nightly", err: `-section "nightly"`},
		{args: "-n 0", err: "want positive integers"},
	} {
		t.Run(tt.args, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := parse(strings.Fields(tt.args))
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect([]string{cfg.section, cfg.out, cfg.raw}).To(Equal([]string{tt.section, tt.out, tt.raw}))
		})
	}
}

func TestReplaceSection(t *testing.T) {
	g := NewWithT(t)
	doc := "# Benchmarks\n\nIntro.\n"
	doc, err := replaceSection(doc, "fresh", "fresh 1\n")
	g.Expect(err).NotTo(HaveOccurred())
	doc, err = replaceSection(doc, "pools", "pools 1\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(doc).To(Equal("# Benchmarks\n\nIntro.\n" +
		"\n## Fresh installs: ours against the floor\n\n<!-- BEGIN hack/bench: fresh -->\nfresh 1\n<!-- END hack/bench: fresh -->\n" +
		"\n## Warm pools: a burst of claims\n\n<!-- BEGIN hack/bench: pools -->\npools 1\n<!-- END hack/bench: pools -->\n"))

	// A second run of a mode rewrites its own part only: the prose after it
	// and the other sections stay.
	doc = strings.Replace(doc, "<!-- END hack/bench: fresh -->\n", "<!-- END hack/bench: fresh -->\n\nReading it.\n", 1)
	doc, err = replaceSection(doc, "fresh", "fresh 2\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(doc).To(ContainSubstring("<!-- BEGIN hack/bench: fresh -->\nfresh 2\n<!-- END hack/bench: fresh -->\n\nReading it.\n"))
	g.Expect(doc).To(ContainSubstring("pools 1\n"))
	g.Expect(doc).NotTo(ContainSubstring("fresh 1"))

	_, err = replaceSection("<!-- END hack/bench: fresh -->\n", "fresh", "x")
	g.Expect(err).To(HaveOccurred(), "half a pair of markers is refused, not appended to")
}

// The lines of a section that say how its figures were taken.
var (
	measuredRE = regexp.MustCompile("Measured (.+?) with `go run ./hack/bench ?(.*?)`; raw figures in \\[([^]]+)\\]")
	machineRE  = regexp.MustCompile(`(?m)^Machine: (.*)\.$`)
	limitRE    = regexp.MustCompile(`memory limit it ships with \(([^,]+), config/manager\)`)
)

// TestReportSectionsAreTheirRawFigures renders each section of
// docs/benchmarks.md from its raw figures, with the arguments, date and
// machine the section records, and finds exactly what the section says: the
// report is what the bench writes, and its JSON files are readable.
func TestReportSectionsAreTheirRawFigures(t *testing.T) {
	reportPath := filepath.Join("..", "..", "docs", "benchmarks.md")
	data, err := os.ReadFile(reportPath)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	doc := string(data)
	for _, section := range sectionOrder {
		t.Run(section, func(t *testing.T) {
			g := NewWithT(t)
			name := "hack/bench: " + section
			i, j := strings.Index(doc, marker.Begin(name)), strings.Index(doc, marker.End(name))
			g.Expect(i).To(BeNumerically(">=", 0), "docs/benchmarks.md has no section %s", section)
			part := doc[i:j]
			m := measuredRE.FindStringSubmatch(part)
			g.Expect(m).NotTo(BeNil(), "the section's Measured line")
			cfg, err := parse(strings.Fields(m[2]))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.section).To(Equal(section), "the section's arguments measure another mode")
			g.Expect(m[3]).To(Equal("benchmarks-" + section + ".json"))
			machine := machineRE.FindStringSubmatch(part)
			g.Expect(machine).NotTo(BeNil(), "the section's Machine line")
			cfg.run = runInfo{Args: m[2], When: m[1], Machine: machine[1]}
			raw, err := os.ReadFile(filepath.Join("..", "..", "docs", m[3]))
			g.Expect(err).NotTo(HaveOccurred())
			var content string
			if section == "resident" {
				var points []residentPoint
				g.Expect(json.Unmarshal(raw, &points)).To(Succeed())
				limit := limitRE.FindStringSubmatch(part)
				g.Expect(limit).NotTo(BeNil())
				content = residentReport(cfg, resource.MustParse(limit[1]), points)
			} else {
				var results []result
				g.Expect(json.Unmarshal(raw, &results)).To(Succeed())
				g.Expect(results).NotTo(BeEmpty())
				content = report(cfg, results)
			}
			if *update {
				doc, err = replaceSection(doc, section, content)
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(part).To(Equal(marker.Begin(name) + "\n" + content))
		})
	}
	if *update {
		NewWithT(t).Expect(os.WriteFile(reportPath, []byte(doc), 0o644)).To(Succeed())
	}
}
