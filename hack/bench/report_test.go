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
		{"claim-floor,pooled,instancer", false, "pools"},
		{"claim-floor", false, "pools"},
		{"ours", true, "resident"},
	} {
		NewWithT(t).Expect(sectionFor(strings.Split(tt.systems, ","), tt.resident)).To(Equal(tt.want), tt.systems)
	}
}

func TestParseNamesEachModesOwnFiles(t *testing.T) {
	for _, tt := range []struct {
		args              string
		section, out, raw string
		// systems, when set, is what the run measures.
		systems string
		err     string
	}{
		{args: "", section: "comparison", out: "docs/benchmarks.md", raw: "docs/benchmarks-comparison.json"},
		{args: "-systems floor,ours -idle=false", section: "fresh", out: "docs/benchmarks.md", raw: "docs/benchmarks-fresh.json"},
		{args: "-n 500 -systems ours,pooled", section: "pools", out: "docs/benchmarks.md", raw: "docs/benchmarks-pools.json"},
		{args: "-resident -n 1000", section: "resident", out: "docs/benchmarks.md", raw: "docs/benchmarks-resident.json"},
		{args: "-systems ours -section pools -out /tmp/r.md", section: "pools", out: "/tmp/r.md", raw: "/tmp/benchmarks-pools.json"},
		{args: "-json x.json", section: "comparison", out: "docs/benchmarks.md", raw: "x.json"},
		{args: "-section pools -n 500", section: "pools", out: "docs/benchmarks.md", raw: "docs/benchmarks-pools.json", systems: "claim-floor,pooled,instancer"},
		{args: "-section pools -systems pooled,pooled-flags", section: "pools", out: "docs/benchmarks.md", raw: "docs/benchmarks-pools.json", systems: "pooled,pooled-flags"},
		{args: "-section fresh", section: "fresh", out: "docs/benchmarks.md", raw: "docs/benchmarks-fresh.json", systems: "floor,ours"},
		{args: "", section: "comparison", out: "docs/benchmarks.md", raw: "docs/benchmarks-comparison.json", systems: "floor,kubectl,ours,stock"},
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
			if tt.systems != "" {
				g.Expect(strings.Join(cfg.systems, ",")).To(Equal(tt.systems))
			}
		})
	}
}

// TestPoolReportRatiosToTheClaimFloor: with the claim floor in the run,
// every pooled system's row says its all Running and its p95 over the
// floor's at the same size, the floor's own row 1.00; a size the floor was
// not measured at has none, and a run without the floor has no such columns.
func TestPoolReportRatiosToTheClaimFloor(t *testing.T) {
	g := NewWithT(t)
	cfg, err := parse(strings.Fields("-section pools -n 200,500 -reps 1 -idle=false -secrets 0 -out /tmp/r.md"))
	g.Expect(err).NotTo(HaveOccurred())
	results := []result{
		{System: claimFloor, N: 200, Rep: 1, PoolSize: 200, AllRunning: 2, P50: 0.1, P95: 0.5, P99: 0.6, RequestsPerInstance: 2, RequestsToRunningPerInstance: 2, DeleteAll: 3},
		{System: "pooled", N: 200, Rep: 1, PoolSize: 200, PoolFill: 40, AllRunning: 3, P50: 0.4, P95: 1, P99: 1.2, RequestsPerInstance: 38, RequestsToRunningPerInstance: 5.25},
		{System: "instancer", N: 200, Rep: 1, PoolSize: 200, PoolFill: 41, AllRunning: 5.5, P50: 1, P95: 2.25, P99: 3, RequestsPerInstance: 39},
		{System: "pooled", N: 500, Rep: 1, PoolSize: 500, PoolFill: 90, AllRunning: 8, P50: 3, P95: 6, P99: 7, RequestsPerInstance: 38},
	}
	content := report(cfg, results)
	g.Expect(content).NotTo(ContainSubstring("| N | metric |"), "no fresh system measured: no table of them")
	g.Expect(content).To(ContainSubstring("The pooled systems beside the claim floor:"))
	g.Expect(content).To(ContainSubstring("| API requests per instance, burst | API requests per instance, to the last Running | all Running / floor | p95 / floor |\n"))
	g.Expect(content).To(ContainSubstring("| 200 | claim-floor | 200 | - | - | - | - | 2.0 | 0.10 / 0.50 / 0.60 | 2.0 | 2.0 | 1.00 | 1.00 |\n"))
	g.Expect(content).To(ContainSubstring("| 200 | pooled | 200 | 40.0 | 0.000 | 0.00 | 0 | 3.0 | 0.40 / 1.00 / 1.20 | 38.0 | 5.2 | 1.50 | 2.00 |\n"))
	g.Expect(content).To(ContainSubstring("| 200 | instancer | 200 | 41.0 | 0.000 | 0.00 | 0 | 5.5 | 1.00 / 2.25 / 3.00 | 39.0 | 0.0 | 2.75 | 4.50 |\n"))
	g.Expect(content).To(ContainSubstring("| 500 | pooled | 500 | 90.0 | 0.000 | 0.00 | 0 | 8.0 | 3.00 / 6.00 / 7.00 | 38.0 | 0.0 | - | - |\n"), "no floor at 500")
	g.Expect(content).To(ContainSubstring(floorNote))

	g.Expect(content).NotTo(ContainSubstring("CPU per instance"), "no run measured the machine's CPU")
	results[0].MachineCPUPerInstanceMs, results[1].MachineCPUPerInstanceMs = 9.5, 19
	withCPU := report(cfg, results)
	g.Expect(withCPU).To(ContainSubstring("| p95 / floor | CPU per instance, whole machine, to the last Running (ms) | CPU / floor |\n"))
	g.Expect(withCPU).To(ContainSubstring("| 200 | pooled | 200 | 40.0 | 0.000 | 0.00 | 0 | 3.0 | 0.40 / 1.00 / 1.20 | 38.0 | 5.2 | 1.50 | 2.00 | 19.0 | 2.00 |\n"))
	g.Expect(withCPU).To(ContainSubstring("| 200 | instancer | 200 | 41.0 | 0.000 | 0.00 | 0 | 5.5 | 1.00 / 2.25 / 3.00 | 39.0 | 0.0 | 2.75 | 4.50 | - | - |\n"), "not measured")

	cfg.systems = []string{"ours", "pooled"}
	withoutFloor := report(cfg, append([]result{{System: "ours", N: 200, Rep: 1, AllRunning: 30}}, results[1]))
	g.Expect(withoutFloor).To(ContainSubstring("The pooled systems beside ours installing fresh:"))
	g.Expect(withoutFloor).To(ContainSubstring("| N | metric |"))
	g.Expect(withoutFloor).NotTo(ContainSubstring("/ floor"))
	g.Expect(withoutFloor).To(ContainSubstring("| 200 | pooled | 200 | 40.0 | 0.000 | 0.00 | 0 | 3.0 | 0.40 / 1.00 / 1.20 | 38.0 |\n"))
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
	procsRE    = regexp.MustCompile(`pinned to CPU [^ ;)]+ with (GOMAXPROCS=\d+) \(`)
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
			if procs := procsRE.FindStringSubmatch(part); procs != nil {
				cfg.run.GoMaxProcs = procs[1]
			}
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

func TestFreshReportShowsTheMachinesCPUWhenMeasured(t *testing.T) {
	g := NewWithT(t)
	cfg, err := parse(strings.Fields("-systems floor,ours -n 500 -reps 1 -idle=false -secrets 0 -out /tmp/r.md"))
	g.Expect(err).NotTo(HaveOccurred())
	results := []result{{System: "floor", N: 500, Rep: 1, AllRunning: 16}, {System: "ours", N: 500, Rep: 1, AllRunning: 32}}
	g.Expect(report(cfg, results)).NotTo(ContainSubstring("CPU per instance"), "runs before the bench measured it")
	results[0].MachineCPUPerInstanceMs, results[0].APIServerCPUPerInstanceMs = 60, 38
	results[1].MachineCPUPerInstanceMs, results[1].APIServerCPUPerInstanceMs = 120, 68.4
	content := report(cfg, results)
	g.Expect(content).To(ContainSubstring("| 500 | CPU per instance, whole machine, to the last Running (ms) | 60.0 | - | 120.0 | - | - | 2.00 | - |\n"))
	g.Expect(content).To(ContainSubstring("| 500 | CPU per instance, API server, to the last Running (ms) | 38.0 | - | 68.4 | - | - | 1.80 | - |\n"))
}
