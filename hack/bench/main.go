// Command bench measures an opening burst on the local control plane for three
// systems in turn, each on a fresh cluster: challenge-operator as shipped, the
// stock helm-operator (v0.9.1, the module this operator embeds) on the same
// chart, and the floor (the same rendered objects applied without Helm). It
// rewrites its mode's section of the report, docs/benchmarks.md, and that
// section's raw figures (docs/benchmarks-<section>.json).
package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

type config struct {
	sizes   []int
	reps    int
	systems []string
	idle    bool
	secrets int
	out     string
	raw     string
	cpu     string
	profile string
	// profileSeconds is how long the burst's CPU profile lasts; 0 for a
	// fifth of a second per instance.
	profileSeconds int
	flags          []string
	// webhooks serves ours's webhooks, as the OLM bundle runs it.
	webhooks bool
	// resident measures ours at rest instead of bursts.
	resident bool
	// section is the part of the report (out) this run rewrites; raw is its own.
	section string
	// run says when, on what and with which arguments the figures were taken.
	run runInfo
}

func main() {
	cfg, err := parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	} else if err != nil {
		fatal(err)
	}
	ctrllog.SetLogger(logr.Discard())
	cfg.run = thisRun(os.Args[1:], !cfg.resident)
	if cfg.run.GoMaxProcs, err = goMaxProcs(cfg.cpu); err != nil {
		fatal(err)
	}
	if err := run(cfg); err != nil {
		fatal(err)
	}
}

// parse reads the command line. The report is one file, docs/benchmarks.md,
// with a section per mode (sectionFor); each mode keeps its raw figures in
// docs/benchmarks-<section>.json.
func parse(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	sizes := fs.String("n", "100,500,1000", "comma-separated burst sizes")
	systems := fs.String("systems", sectionSystems["comparison"], "systems to measure, in order (default with -section: that section's, e.g. pools: "+sectionSystems["pools"]+")")
	fs.IntVar(&cfg.reps, "reps", 3, "repetitions per system and size (the report shows medians)")
	fs.BoolVar(&cfg.idle, "idle", true, "also measure five minutes after the burst")
	fs.IntVar(&cfg.secrets, "secrets", 5000, "unrelated 32 KiB Secrets created to measure cache growth (0 skips)")
	fs.StringVar(&cfg.out, "out", "docs/benchmarks.md", "Markdown report: this run rewrites its section of it")
	fs.StringVar(&cfg.raw, "json", "", "raw figures (default docs/benchmarks-<section>.json)")
	fs.StringVar(&cfg.section, "section", "", "section of the report to rewrite (default: resident with -resident; pools with a pooled or instancer system; comparison with stock or kubectl; fresh otherwise)")
	fs.StringVar(&cfg.cpu, "cpu", "1", "CPU the operators are pinned to (taskset -c)")
	fs.BoolVar(&cfg.webhooks, "webhooks", true, "ours serves its webhooks (--enable-webhook), as the OLM bundle runs it; false: as config/default runs it, without")
	fs.StringVar(&cfg.profile, "cpuprofile", "", "write CPU profiles of ours during its burst to this file, and of its delete-all to FILE.delete (-n with one size)")
	fs.IntVar(&cfg.profileSeconds, "cpuprofile-seconds", 0, "how long -cpuprofile profiles the burst (0: a fifth of a second per instance, at least 10)")
	fs.BoolVar(&cfg.resident, "resident", false, "measure ours at rest with -n instances Running, brought there in waves on one cluster (-cpuprofile names heap profiles)")
	oursFlags := fs.String("ours-flags", "", "space-separated extra flags for ours (e.g. --max-concurrent-reconciles=16)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	cfg.flags = strings.Fields(*oursFlags)
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return config{}, fmt.Errorf("-n %q: want positive integers", *sizes)
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	if cfg.section != "" && !flagSet(fs, "systems") {
		*systems = sectionSystems[cfg.section]
	}
	cfg.systems = strings.Split(*systems, ",")
	if cfg.section == "" {
		cfg.section = sectionFor(cfg.systems, cfg.resident)
	}
	if _, ok := sectionTitles[cfg.section]; !ok {
		return config{}, fmt.Errorf("-section %q: want one of %s", cfg.section, strings.Join(sectionOrder, ", "))
	}
	if cfg.raw == "" {
		cfg.raw = filepath.Join(filepath.Dir(cfg.out), "benchmarks-"+cfg.section+".json")
	}
	return cfg, nil
}

// flagSet tells whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func run(cfg config) error {
	root := controlplane.RepoRoot()
	bin, err := os.MkdirTemp("", "bench-bin-")
	if err != nil {
		return err
	}
	for name, pkg := range map[string]string{"manager": ".", "helm-operator": "github.com/operator-framework/helm-operator-plugins"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg)
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building %s: %w", name, err)
		}
	}
	if cfg.resident {
		return resident(cfg, root, bin)
	}
	var results []result
	// Repetitions go round the systems, so that a floor is measured beside
	// what is held against it: on a shared machine whose speed drifts (here
	// a claim's CPU time once rose 29% over three repetitions in a row), the
	// drift then falls on both alike.
	for _, n := range cfg.sizes {
		for rep := range cfg.reps {
			for _, sys := range cfg.systems {
				fmt.Fprintf(os.Stderr, "== %s, N=%d, repetition %d\n", sys, n, rep+1)
				r, err := measure(cfg, root, bin, sys, n)
				if err != nil {
					return fmt.Errorf("%s N=%d: %w", sys, n, err)
				}
				r.Rep = rep + 1
				fmt.Fprintf(os.Stderr, "   %+v\n", r)
				results = append(results, r)
				if err := write(cfg, results); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// result is one system's figures for one burst.
type result struct {
	System string `json:"system"`
	N      int    `json:"n"`
	Rep    int    `json:"rep"`
	// AllRunning is from the first create to the last instance Running (ours)
	// or Available (stock, floor).
	AllRunning float64 `json:"allRunningSeconds"`
	P50        float64 `json:"createToRunningP50Seconds"`
	P95        float64 `json:"createToRunningP95Seconds"`
	P99        float64 `json:"createToRunningP99Seconds"`
	// RequestsPerInstance counts the operator's API requests until 10 s after the last Running, per instance.
	RequestsPerInstance float64 `json:"requestsPerInstance,omitempty"`
	// RequestsToRunningPerInstance counts them from the first create to the
	// last Running alone, per instance: a burst's own, without what the
	// operator did before it (a pool's fill) or after (its refill). The claim
	// floor's are its claims' writes.
	RequestsToRunningPerInstance float64 `json:"requestsToRunningPerInstance,omitempty"`
	// MachineCPUPerInstanceMs is the CPU the bench and every process it
	// started (the control plane, KWOK, the operator, the instancer) used
	// from the first create to the last Running, per instance, in ms:
	// where, as here, the floor keeps every core busy, all Running is in
	// proportion to it. APIServerCPUPerInstanceMs is the API server's share.
	MachineCPUPerInstanceMs   float64 `json:"machineCPUPerInstanceMs,omitempty"`
	APIServerCPUPerInstanceMs float64 `json:"apiserverCPUPerInstanceMs,omitempty"`
	// HelmReconcilesPerInstance counts the Helm controller's reconciles until 70 s after the last Running.
	HelmReconcilesPerInstance float64 `json:"helmReconcilesPerInstance"`
	// After is 10 to 70 s after the last Running; Idle is 5 to 6 minutes after.
	AfterRequestsPerSecond float64 `json:"afterRequestsPerSecond"`
	AfterCPUPercent        float64 `json:"afterCPUPercent"`
	IdleRequestsPerSecond  float64 `json:"idleRequestsPerSecond,omitempty"`
	IdleCPUPercent         float64 `json:"idleCPUPercent,omitempty"`
	PeakRSSMiB             float64 `json:"peakRSSMiB"`
	SecretsGrowthMiB       float64 `json:"unrelatedSecretsRSSGrowthMiB"`
	DeleteAll              float64 `json:"deleteAllSeconds"`
	// DeleteRequestsPerInstance and DeleteReconcilesPerInstance count the
	// operator's API requests and Helm reconciles from delete-all to nothing left.
	DeleteRequestsPerInstance   float64 `json:"deleteRequestsPerInstance,omitempty"`
	DeleteReconcilesPerInstance float64 `json:"deleteReconcilesPerInstance,omitempty"`
	// PoolSize is the warm pool's (pooled systems): its fill time, and its
	// cost at rest from 10 to 70 s after it is full.
	PoolSize                  int     `json:"poolSize,omitempty"`
	PoolFill                  float64 `json:"poolFillSeconds,omitempty"`
	PoolRestRequestsPerSecond float64 `json:"poolRestRequestsPerSecond,omitempty"`
	PoolRestCPUPercent        float64 `json:"poolRestCPUPercent,omitempty"`
	PoolRestRSSMiB            float64 `json:"poolRestRSSMiB,omitempty"`
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// medians is a result whose every figure is the median of that figure in rs
// (one system and size).
func medians(rs []result) result {
	m := result{System: rs[0].System, N: rs[0].N, Rep: len(rs), PoolSize: rs[0].PoolSize}
	out := reflect.ValueOf(&m).Elem()
	for f := range out.NumField() {
		if out.Field(f).Kind() != reflect.Float64 {
			continue
		}
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = reflect.ValueOf(r).Field(f).Float()
		}
		out.Field(f).SetFloat(median(xs))
	}
	return m
}

// mediansOf is the medians of sys's results at size n, if it has any.
func mediansOf(results []result, sys string, n int) (result, bool) {
	var rs []result
	for _, r := range results {
		if r.System == sys && r.N == n {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return result{}, false
	}
	return medians(rs), true
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// write renders the raw figures so far and the report's section of them.
func write(cfg config, results []result) error {
	return writeSection(cfg, results, report(cfg, results))
}

func report(cfg config, results []result) string {
	med := map[string]map[int]result{}
	for _, sys := range []string{"floor", "kubectl", "ours", "stock"} {
		med[sys] = map[int]result{}
		for _, n := range cfg.sizes {
			if m, ok := mediansOf(results, sys, n); ok {
				med[sys][n] = m
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s Operators pinned to CPU %s%s; medians of %d repetition(s).\n\nMachine: %s.\n",
		cfg.run.line(cfg.raw), cfg.cpu, cfg.run.procs(), cfg.reps, cfg.run.Machine)
	burstTable(&b, cfg, med)
	poolReport(&b, cfg, results)
	return b.String()
}

// burstTable adds the table of the fresh systems (floor, kubectl, ours,
// stock), if the run measured any.
func burstTable(b *strings.Builder, cfg config, med map[string]map[int]result) {
	measured := false
	for _, bySize := range med {
		measured = measured || len(bySize) > 0
	}
	if !measured {
		return
	}
	fmt.Fprintf(b, "\n| N | metric | floor | kubectl | ours | stock | ours/stock | ours/floor | ours/kubectl |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range cfg.sizes {
		rows := []struct {
			name  string
			f     func(result) float64
			unit  string
			floor bool
			// since says the row is shown only when a system measured it:
			// runs before the bench did have none.
			since bool
		}{
			{"all Running (s)", func(r result) float64 { return r.AllRunning }, "%.1f", true, false},
			{"create to Running p50 / p95 / p99 (s)", nil, "", true, false},
			{"CPU per instance, whole machine, to the last Running (ms)", func(r result) float64 { return r.MachineCPUPerInstanceMs }, "%.1f", true, true},
			{"CPU per instance, API server, to the last Running (ms)", func(r result) float64 { return r.APIServerCPUPerInstanceMs }, "%.1f", true, true},
			{"Helm reconciles per instance", func(r result) float64 { return r.HelmReconcilesPerInstance }, "%.2f", false, false},
			{"API requests per instance, burst", func(r result) float64 { return r.RequestsPerInstance }, "%.1f", false, false},
			{"API requests/s, 10-70 s after", func(r result) float64 { return r.AfterRequestsPerSecond }, "%.1f", false, false},
			{"CPU % of a core, 10-70 s after", func(r result) float64 { return r.AfterCPUPercent }, "%.1f", false, false},
			{"API requests/s, 5-6 min after", func(r result) float64 { return r.IdleRequestsPerSecond }, "%.2f", false, false},
			{"CPU % of a core, 5-6 min after", func(r result) float64 { return r.IdleCPUPercent }, "%.2f", false, false},
			{"peak RSS (MiB)", func(r result) float64 { return r.PeakRSSMiB }, "%.0f", false, false},
			{"RSS growth, unrelated Secrets (MiB)", func(r result) float64 { return r.SecretsGrowthMiB }, "%.1f", false, false},
			{"delete all until nothing left (s)", func(r result) float64 { return r.DeleteAll }, "%.1f", true, false},
			{"API requests per instance, delete", func(r result) float64 { return r.DeleteRequestsPerInstance }, "%.1f", false, false},
			{"Helm reconciles per instance, delete", func(r result) float64 { return r.DeleteReconcilesPerInstance }, "%.2f", false, false},
		}
		for _, row := range rows {
			if !cfg.idle && strings.Contains(row.name, "min after") {
				continue
			}
			if row.since && !slices.ContainsFunc(slices.Collect(maps.Values(med)), func(bySize map[int]result) bool { return row.f(bySize[n]) > 0 }) {
				continue
			}
			cell := func(sys string) string {
				r, ok := med[sys][n]
				if !ok || (isFloor(sys) && !row.floor) || (row.since && row.f(r) == 0) {
					return "-"
				}
				if row.f == nil {
					return fmt.Sprintf("%.1f / %.1f / %.1f", r.P50, r.P95, r.P99)
				}
				return fmt.Sprintf(row.unit, row.f(r))
			}
			ratio := func(other string) string {
				o, ok1 := med[other][n]
				r, ok2 := med["ours"][n]
				if !ok1 || !ok2 || row.f == nil || (isFloor(other) && !row.floor) || row.f(o) == 0 {
					return "-"
				}
				return fmt.Sprintf("%.2f", row.f(r)/row.f(o))
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", n, row.name, cell("floor"), cell("kubectl"), cell("ours"), cell("stock"),
				ratio("stock"), ratio("floor"), ratio("kubectl"))
		}
	}
}

// poolReport adds the warm pools' table: each pooled system's burst beside
// ours installing fresh and the claim floor, when the run measured them,
// with each one's ratios to the floor's.
func poolReport(b *strings.Builder, cfg config, results []result) {
	var pooled []string
	for _, sys := range cfg.systems {
		if _, ok := poolSizeOf(sys, 0); ok {
			pooled = append(pooled, sys)
		}
	}
	if len(pooled) == 0 && !slices.Contains(cfg.systems, claimFloor) {
		return
	}
	measured := func(sys string) bool {
		return slices.ContainsFunc(results, func(r result) bool { return r.System == sys })
	}
	floored := measured(claimFloor)
	// Runs before the bench measured the machine's CPU have no such column.
	cpu := floored && slices.ContainsFunc(results, func(r result) bool { return r.MachineCPUPerInstanceMs > 0 })
	var besides []string
	if measured("ours") {
		besides = append(besides, "ours installing fresh")
	}
	if floored {
		besides = append(besides, "the claim floor")
	}
	if len(besides) > 0 {
		fmt.Fprintf(b, "\nThe pooled systems beside %s:\n\n", strings.Join(besides, " and "))
	} else {
		fmt.Fprintf(b, "\nThe pooled systems:\n\n")
	}
	header := "| N | system | pool | fill (s) | at rest: requests/s | at rest: CPU % of a core | at rest: RSS (MiB) | all Running (s) | create to Running p50 / p95 / p99 (s) | API requests per instance, burst |"
	rule := "|---|---|---|---|---|---|---|---|---|---|"
	if floored {
		header += " API requests per instance, to the last Running | all Running / floor | p95 / floor |"
		rule += "---|---|---|"
	}
	if cpu {
		header += " CPU per instance, whole machine, to the last Running (ms) | CPU / floor |"
		rule += "---|---|"
	}
	b.WriteString(header + "\n" + rule + "\n")
	for _, n := range cfg.sizes {
		floor, hasFloor := mediansOf(results, claimFloor, n)
		for _, sys := range append([]string{"ours", claimFloor}, pooled...) {
			m, ok := mediansOf(results, sys, n)
			if !ok {
				continue
			}
			rest := func(format string, v float64) string {
				if m.PoolSize == 0 || isFloor(sys) {
					return "-"
				}
				return fmt.Sprintf(format, v)
			}
			fmt.Fprintf(b, "| %d | %s | %d | %s | %s | %s | %s | %.1f | %.2f / %.2f / %.2f | %.1f |", n, sys, m.PoolSize,
				rest("%.1f", m.PoolFill), rest("%.3f", m.PoolRestRequestsPerSecond), rest("%.2f", m.PoolRestCPUPercent), rest("%.0f", m.PoolRestRSSMiB),
				m.AllRunning, m.P50, m.P95, m.P99, m.RequestsPerInstance)
			if floored {
				fmt.Fprintf(b, " %.1f | %s | %s |", m.RequestsToRunningPerInstance, ratioTo(m.AllRunning, floor.AllRunning, hasFloor), ratioTo(m.P95, floor.P95, hasFloor))
			}
			if cpu {
				fmt.Fprintf(b, " %s | %s |", orDash("%.1f", m.MachineCPUPerInstanceMs),
					ratioTo(m.MachineCPUPerInstanceMs, floor.MachineCPUPerInstanceMs, hasFloor && m.MachineCPUPerInstanceMs > 0))
			}
			b.WriteString("\n")
		}
	}
	if floored {
		fmt.Fprintf(b, "\n%s\n", floorNote)
	}
}

// floorNote says how the claim floor's row reads.
const floorNote = "claim-floor: no operator; the pool written as a full one is, then the same creates, each followed at once by " +
	"the two writes a claim needs (the pooled instance's update, the Challenge's status Running). Its all Running is from " +
	"the first create to the last status write, its create to Running from each create to that Challenge's status write, " +
	"its requests its claims' writes. Requests to the last Running are the operator's from the first create to the last Running."

// ratioTo is x over the floor's figure, "-" without a floor.
func ratioTo(x, floor float64, ok bool) string {
	if !ok || floor == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", x/floor)
}

// isFloor tells whether sys runs no operator.
func isFloor(sys string) bool { return sys == "floor" || sys == "kubectl" || sys == claimFloor }

func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "model name") {
			return strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	data, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return fmt.Sprintf("%.0f GiB", float64(kb)/1024/1024)
		}
	}
	return "unknown memory"
}

func helmVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "helm.sh/helm/v3" {
				return "Helm " + dep.Version
			}
		}
	}
	return "Helm"
}

// since is seconds from t0 to t.
func since(t0, t time.Time) float64 { return t.Sub(t0).Seconds() }

// orDash formats v, or is "-" when v was not measured (0).
func orDash(format string, v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}
