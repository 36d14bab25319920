package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challenge"
	"github.com/challenge-operator/challenge-operator/internal/endpoint"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/pool"
)

// claimFloor is the claims' floor: what a burst of claims from a full pool
// costs the API server alone. No operator runs. Before the clock the pool is
// there as the pooled system's is once full: the template, and as many
// Running pooled instances as the burst, written as the operator writes
// them. On the clock the same 8 workers create the same Challenges, and each
// Challenge, once created, is claimed at once, with no watch, cache or queue
// between, by the two writes a claim needs at least: the update of one
// pooled instance at the resourceVersion it was read at (pool.MarkClaimed,
// as the operator's claim writes it), then the Challenge's status, Running
// with the instance's endpoints (lifecycle.Apply, as the operator's status
// writer applies it). A Challenge is done at its status write.
const claimFloor = "claim-floor"

// floorClaims is one burst of the claim floor: the pool it claims from, and
// what its claims did.
type floorClaims struct {
	cl     client.Client
	tmpl   *ctfv1alpha1.ChallengeTemplate
	pooled []*ctfv1alpha1.Challenge

	wg     sync.WaitGroup
	writes atomic.Int64
	mu     sync.Mutex
	done   map[string]time.Time
	err    error
}

// fillFloorPool creates the pooled template (as fillPool does) and n Running
// pooled instances of it, no operator involved.
func fillFloorPool(ctx context.Context, cl client.Client, n int) (*floorClaims, error) {
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: poolNamespace}}); err != nil {
		return nil, err
	}
	tmpl := pooledTemplateOf(int32(n), false)
	if err := cl.Create(ctx, tmpl); err != nil {
		return nil, err
	}
	f := &floorClaims{cl: cl, tmpl: tmpl, pooled: make([]*ctfv1alpha1.Challenge, n), done: map[string]time.Time{}}
	err := parallel(n, 8, func(i int) error {
		ch := pool.New(tmpl, poolNamespace)
		if err := cl.Create(ctx, ch); err != nil {
			return err
		}
		ch.Status = runningPooled(ch)
		if err := challenge.ApplyStatus(ctx, cl, ch); err != nil {
			return fmt.Errorf("the status of pooled %s: %w", ch.Name, err)
		}
		f.pooled[i] = ch
		return nil
	})
	return f, err
}

// runningPooled is the status of a pooled instance whose release is
// installed and Running: its Deployment ready, its Service's address.
func runningPooled(ch *ctfv1alpha1.Challenge) ctfv1alpha1.ChallengeStatus {
	st := ctfv1alpha1.ChallengeStatus{DeployedRelease: &ctfv1alpha1.DeployedRelease{Name: ch.Name}}
	lifecycle.Apply(&st, ch.Generation, lifecycle.Observation{
		Conditions: []metav1.Condition{
			{Type: lifecycle.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"},
			{Type: lifecycle.ConditionDeployed, Status: metav1.ConditionTrue, Reason: "InstallSuccessful"},
		},
		Workloads: []lifecycle.Workload{{Kind: "Deployment", Name: ch.Name, Status: kstatus.CurrentStatus}},
		Endpoints: floorEndpoints(ch),
		Created:   ch.CreationTimestamp,
	}, metav1.Now())
	return st
}

// floorEndpoints are the endpoints of a pooled instance's ClusterIP Service.
func floorEndpoints(ch *ctfv1alpha1.Challenge) []ctfv1alpha1.Endpoint {
	return endpoint.For(endpoint.Inputs{Service: &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ch.Name, Namespace: ch.Namespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}},
	}})
}

// claimed is the status of c once it claimed pooled: Running, with
// pooled's endpoints, its lifetime begun.
func (f *floorClaims) claimed(c, pooled *ctfv1alpha1.Challenge) ctfv1alpha1.ChallengeStatus {
	st := c.Status
	lifecycle.Apply(&st, c.Generation, lifecycle.Observation{
		Conditions: []metav1.Condition{{Type: lifecycle.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}},
		Workloads:  []lifecycle.Workload{{Kind: "Deployment", Name: pooled.Name, Status: kstatus.CurrentStatus}},
		Endpoints:  pooled.Status.Endpoints,
		Created:    c.CreationTimestamp,
		Lifetime:   f.tmpl.Spec.Lifetime.Default.Duration,
		PooledInstance: &ctfv1alpha1.PooledInstanceRef{
			Namespace: pooled.Namespace, Name: pooled.Name,
		},
	}, metav1.Now())
	return st
}

// create creates chs[i] and claims pooled instance i for it at once, in a
// goroutine of its own: the next create does not wait for the claim.
func (f *floorClaims) create(ctx context.Context, chs []*ctfv1alpha1.Challenge) func(i int) error {
	return func(i int) error {
		c := chs[i].DeepCopy()
		if err := f.cl.Create(ctx, c); err != nil {
			return err
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			err := f.claim(ctx, c, f.pooled[i].DeepCopy())
			f.mu.Lock()
			defer f.mu.Unlock()
			if err != nil && f.err == nil {
				f.err = fmt.Errorf("claim of %s: %w", c.Name, err)
			}
			f.done[c.Name] = time.Now()
		}()
		return nil
	}
}

// claim makes the two writes of c's claim of pooled.
func (f *floorClaims) claim(ctx context.Context, c, pooled *ctfv1alpha1.Challenge) error {
	pool.MarkClaimed(pooled, c)
	f.writes.Add(1)
	if err := f.cl.Update(ctx, pooled); err != nil {
		return err
	}
	c.Status = f.claimed(c, pooled)
	f.writes.Add(1)
	return challenge.ApplyStatus(ctx, f.cl, c)
}

// wait waits for every claim started and returns when each was done.
func (f *floorClaims) wait() (map[string]time.Time, error) {
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done, f.err
}

// requestsPerClaim is the API requests the claims made, per Challenge.
func (f *floorClaims) requestsPerClaim(n int) float64 { return float64(f.writes.Load()) / float64(n) }
