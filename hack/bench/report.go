package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/challenge-operator/challenge-operator/hack/internal/marker"
)

// The report's sections, one per mode, in the order a new report lists them.
var sectionOrder = []string{"fresh", "pools", "resident", "comparison"}

// sectionTitles head the sections a run adds to a report that lacks them.
var sectionTitles = map[string]string{
	"fresh":      "Fresh installs: ours against the floor",
	"pools":      "Warm pools: a burst of claims",
	"resident":   "Resident instances: one operator at rest",
	"comparison": "The full comparison: ours, the stock helm-operator, kubectl and the floor",
}

// sectionFor is the section a run's systems write: the mode it measures.
func sectionFor(systems []string, resident bool) string {
	if resident {
		return "resident"
	}
	section := "fresh"
	for _, sys := range systems {
		if _, pooled := poolSizeOf(sys, 0); pooled || sys == claimFloor {
			return "pools"
		}
		if sys == "stock" || sys == "kubectl" {
			section = "comparison"
		}
	}
	return section
}

// sectionSystems are the systems a section's run measures when -section
// names it and -systems is not given: the pools' claims beside their floor,
// directly and through the instancer.
var sectionSystems = map[string]string{
	"fresh":      "floor,ours",
	"pools":      claimFloor + ",pooled,instancer",
	"resident":   "ours",
	"comparison": "floor,kubectl,ours,stock",
}

// runInfo says when, at which commit, on what machine and with which
// arguments figures were taken, so that a section read later is labelled.
type runInfo struct {
	Args    string
	When    string
	Machine string
	// GoMaxProcs is the operators' GOMAXPROCS setting (goMaxProcs); empty
	// in a section recorded before it was set.
	GoMaxProcs string
}

// procs is the operators' GOMAXPROCS as the report says it.
func (r runInfo) procs() string {
	if r.GoMaxProcs == "" {
		return ""
	}
	return fmt.Sprintf(" with %s (Go's own choice under the CPU limit config/manager ships)", r.GoMaxProcs)
}

// thisRun describes the run under way.
func thisRun(args []string, withHelm bool) runInfo {
	machine := fmt.Sprintf("%d CPUs (%s), %s; %s, Kubernetes 1.35.4, helm-operator-plugins v0.9.1", runtime.NumCPU(), cpuModel(), memTotal(), runtime.Version())
	if withHelm {
		machine += ", " + helmVersion()
	}
	return runInfo{
		Args:    strings.Join(args, " "),
		When:    fmt.Sprintf("on %s at commit %s", time.Now().UTC().Format(time.DateOnly), gitCommit()),
		Machine: machine,
	}
}

// gitCommit is the commit measured, and whether the tree had changes.
func gitCommit() string {
	head, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(head))
	if changes, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(changes) > 0 {
		commit += " with uncommitted changes"
	}
	return commit
}

// line is the sentence a section starts with: when and how its figures were
// taken, and where the raw ones are.
func (r runInfo) line(raw string) string {
	args := ""
	if r.Args != "" {
		args = " " + r.Args
	}
	name := filepath.Base(raw)
	return fmt.Sprintf("Measured %s with `go run ./hack/bench%s`; raw figures in [%s](%s).", r.When, args, name, name)
}

// writeSection writes a run's raw figures to its own file and its section of
// the report, leaving the other sections and the prose around them alone.
func writeSection(cfg config, figures any, content string) error {
	raw, err := json.MarshalIndent(figures, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg.raw, append(raw, '\n'), 0o644); err != nil {
		return err
	}
	doc, err := os.ReadFile(cfg.out)
	if errors.Is(err, fs.ErrNotExist) {
		doc = []byte("# Benchmarks\n")
	} else if err != nil {
		return err
	}
	updated, err := replaceSection(string(doc), cfg.section, content)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.out, err)
	}
	return os.WriteFile(cfg.out, []byte(updated), 0o644)
}

// replaceSection returns the report with the section's generated part
// replaced, or, when the report has no such section yet, added at its end
// under its title.
func replaceSection(doc, section, content string) (string, error) {
	name := "hack/bench: " + section
	if strings.Contains(doc, marker.Begin(name)) || strings.Contains(doc, marker.End(name)) {
		return marker.Replace(doc, name, content)
	}
	if !strings.HasSuffix(doc, "\n") {
		doc += "\n"
	}
	return doc + "\n## " + sectionTitles[section] + "\n\n" + marker.Section(name, content) + "\n", nil
}
