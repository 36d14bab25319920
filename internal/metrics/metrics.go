// Package metrics exports the Challenge lifecycle to Prometheus on the
// manager's metrics endpoint.
package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

var (
	timeToReady = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "challenge_time_to_ready_seconds",
		Help:    "Time from a Challenge's creation until it first became Running.",
		Buckets: []float64{0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300},
	})
	queueWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "challenge_queue_wait_seconds",
		Help:    "Time Challenges waited Queued, from their creation until capacity let them be installed.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600},
	})
	errorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_errors_total",
		Help: "Transitions of Challenges into the Error phase, by reason.",
	}, []string{"reason"})
	renewals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_renewals_total",
		Help: "Renewal requests of instances by verdict: the reason of the Renewed condition (Renewed, or why it was refused).",
	}, []string{"reason"})
	expiries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "challenge_expiries_total",
		Help: "Instances deleted because they expired.",
	})
	phaseDesc = prometheus.NewDesc("challenge_phase_count",
		"Challenges by phase and template (empty for those without one), counted from the operator's cache at scrape time; every phase of every template in use is reported, zeros included.", []string{"phase", templateLabel}, nil)
	startingDesc = prometheus.NewDesc("challenge_starting_oldest_seconds",
		"Age of the oldest Challenge that has never been Running, by its phase (None, Queued, Pending); 0 when there is none.", []string{"phase"}, nil)
	overdueDesc = prometheus.NewDesc("challenge_expiry_overdue_seconds",
		"How long past its expiresAt the most overdue Challenge still exists; 0 when none is.", nil, nil)
)

// ObserveTimeToReady records how long an instance took to become Running.
func ObserveTimeToReady(d time.Duration) { timeToReady.Observe(d.Seconds()) }

// ObserveQueueWait records how long an instance waited Queued.
func ObserveQueueWait(d time.Duration) { queueWait.Observe(d.Seconds()) }

// ObserveError counts a transition into Error.
func ObserveError(reason string) { errorsTotal.WithLabelValues(reason).Inc() }

// ObserveRenewal counts a renewal's verdict, by the Renewed condition's reason.
func ObserveRenewal(reason string) { renewals.WithLabelValues(reason).Inc() }

// ObserveExpiry counts an instance deleted at expiry.
func ObserveExpiry() { expiries.Inc() }

// Register adds the metrics to controller-runtime's registry; phases are
// counted from reader (the manager's cache) at every scrape, so the gauge is
// always exactly what the cluster holds. operatorsOwn tells the operator's
// own instances, which the pool's and the templates' metrics count: the
// unclaimed pooled ones (a claimed one is its claimant's instance, counted
// once as the claimant's phase) and the canaries.
// Registered again (a manager set up anew in the same process), the phases
// are counted from the new reader: the old one's cache may have stopped.
func Register(reader client.Reader, operatorsOwn func(*ctfv1alpha1.Challenge) bool) {
	instances.set(reader, operatorsOwn)
	registerOnce.Do(func() {
		crmetrics.Registry.MustRegister(timeToReady, queueWait, errorsTotal, renewals, expiries, instances,
			poolInstances, poolTarget, poolClaims, templateDegraded, canaries, solverHealthy, solverRuns, helmAnswered)
	})
}

var registerOnce sync.Once

// instances counts the Challenges by phase for Register's registry.
var instances = &phaseCollector{}

// phases are every phase, each reported even when no Challenge is in it.
var phases = []ctfv1alpha1.Phase{ctfv1alpha1.PhaseNone, ctfv1alpha1.PhaseQueued, ctfv1alpha1.PhasePending,
	ctfv1alpha1.PhaseRunning, ctfv1alpha1.PhaseError, ctfv1alpha1.PhaseDeleted}

type phaseCollector struct {
	mu           sync.Mutex // guards reader and operatorsOwn, which Register may replace
	reader       client.Reader
	operatorsOwn func(*ctfv1alpha1.Challenge) bool
	now          func() time.Time // time.Now when nil
}

func (c *phaseCollector) set(reader client.Reader, operatorsOwn func(*ctfv1alpha1.Challenge) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader, c.operatorsOwn = reader, operatorsOwn
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- phaseDesc
	ch <- startingDesc
	ch <- overdueDesc
}

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.mu.Lock()
	reader, operatorsOwn := c.reader, c.operatorsOwn
	c.mu.Unlock()
	var list ctfv1alpha1.ChallengeList
	if err := reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil { // read-only
		ch <- prometheus.NewInvalidMetric(phaseDesc, err)
		return
	}
	now := time.Now()
	if c.now != nil {
		now = c.now()
	}
	type key struct {
		phase    ctfv1alpha1.Phase
		template string
	}
	counts := map[key]int{}
	templates := map[string]bool{"": true}
	starting := map[ctfv1alpha1.Phase]time.Duration{ctfv1alpha1.PhaseNone: 0, ctfv1alpha1.PhaseQueued: 0, ctfv1alpha1.PhasePending: 0}
	var overdue time.Duration
	for i := range list.Items {
		inst := &list.Items[i]
		if operatorsOwn(inst) {
			continue
		}
		phase := inst.Status.Phase
		if phase == "" {
			phase = ctfv1alpha1.PhaseNone
		}
		counts[key{phase, inst.Spec.Template}]++
		templates[inst.Spec.Template] = true
		if oldest, waiting := starting[phase]; waiting && inst.Status.ReadyAt == nil {
			starting[phase] = max(oldest, now.Sub(inst.CreationTimestamp.Time))
		}
		if inst.Status.ExpiresAt != nil {
			overdue = max(overdue, now.Sub(inst.Status.ExpiresAt.Time))
		}
	}
	for template := range templates {
		for _, phase := range phases {
			n := counts[key{phase, template}]
			ch <- prometheus.MustNewConstMetric(phaseDesc, prometheus.GaugeValue, float64(n), string(phase), template)
		}
	}
	for phase, age := range starting {
		ch <- prometheus.MustNewConstMetric(startingDesc, prometheus.GaugeValue, age.Seconds(), string(phase))
	}
	ch <- prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, overdue.Seconds())
}
