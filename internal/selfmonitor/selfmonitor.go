// Package selfmonitor creates the operator's own ServiceMonitor and alerts
// (PrometheusRule) in its namespace when the cluster serves the Prometheus
// Operator's kinds (--create-monitors, which the OLM bundle sets).
//
// An OLM bundle cannot carry them: OLM fails a whole install whose bundle
// holds a kind the cluster does not serve, and many clusters have no
// Prometheus Operator. So the operator brings them where they can exist, as
// config/prometheus and the Helm chart do elsewhere: the same objects (the
// files here are make manifests' copies of config/prometheus), owned by the
// operator's metrics Service, so that they go with the install.
package selfmonitor

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/challenge-operator/challenge-operator/internal/manifests"
)

// Rights in the operator's own namespace only (a Role): the monitors and
// alerts it applies, and finding its metrics Service to own them.
// Server-side apply needs patch, and create for an object not there yet.
// +kubebuilder:rbac:groups=monitoring.coreos.com,namespace=system,resources=servicemonitors;prometheusrules,verbs=create;patch
// +kubebuilder:rbac:groups="",namespace=system,resources=services,verbs=list

var (
	//go:embed monitor.yaml
	monitorYAML []byte
	//go:embed rules.yaml
	rulesYAML []byte
)

const (
	// groupVersion is the Prometheus Operator's API.
	groupVersion = "monitoring.coreos.com/v1"
	// namePrefix is what kustomize's namePrefix gives config/prometheus' objects.
	namePrefix = "challenge-operator-"
	fieldOwner = "challenge-operator-monitoring"
	// Interval is how often the objects are applied again once they are:
	// edits to them are undone.
	Interval = 10 * time.Minute
	// FirstRetry is the wait after a round that applied nothing (an error,
	// the kinds not served, no metrics Service yet); it doubles up to
	// Interval, so monitors come soon after the Prometheus Operator or the
	// Service does, and a webhook briefly down at start costs seconds.
	FirstRetry = time.Second
)

// Monitors applies the operator's ServiceMonitor and PrometheusRule in
// Namespace at start and every Interval, where the cluster serves them.
type Monitors struct {
	// Namespace is the operator's own.
	Namespace string
	// Client applies the objects; Reader finds the metrics Service.
	Client client.Client
	Reader client.Reader
	// Discovery tells whether the Prometheus Operator's kinds are served.
	Discovery discovery.DiscoveryInterface
}

// NeedLeaderElection makes only the leader write.
func (m *Monitors) NeedLeaderElection() bool { return true }

// Start applies the objects until ctx ends: every Interval once a round has
// applied them, and sooner, backing off from FirstRetry, while rounds apply
// nothing or fail (failures are logged).
func (m *Monitors) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("selfmonitor")
	retry := FirstRetry
	for {
		wait := Interval
		switch applied, err := m.Apply(ctx); {
		case err != nil:
			log.Error(err, "applying the operator's ServiceMonitor and alerts", "retryIn", retry)
			wait, retry = retry, min(2*retry, Interval)
		case len(applied) == 0:
			log.V(1).Info("no Prometheus Operator kinds served, or no metrics Service: nothing to monitor with", "retryIn", retry)
			wait, retry = retry, min(2*retry, Interval)
		default:
			retry = FirstRetry
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Apply applies whichever of the ServiceMonitor and the PrometheusRule the
// cluster serves, owned by the metrics Service, and returns the kinds it
// applied. Without the kinds or the Service it applies nothing, and that is
// no error. One refused object (a policy forbidding insecureSkipVerify, say)
// keeps the other from nobody: the errors are joined.
func (m *Monitors) Apply(ctx context.Context) ([]string, error) {
	served, err := m.served()
	if err != nil || len(served) == 0 {
		return nil, err
	}
	objs, err := Objects()
	if err != nil {
		return nil, err
	}
	owner, err := m.metricsService(ctx, objs)
	if err != nil || owner == nil {
		return nil, err
	}
	var applied []string
	var errs []error
	for _, o := range objs {
		if !slices.Contains(served, o.GetKind()) {
			continue
		}
		o.SetNamespace(m.Namespace)
		o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: owner.Name, UID: owner.UID}})
		if err := m.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			errs = append(errs, fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err))
			continue
		}
		applied = append(applied, o.GetKind())
	}
	return applied, errors.Join(errs...)
}

// served returns which of ServiceMonitor and PrometheusRule the cluster serves.
func (m *Monitors) served() ([]string, error) {
	list, err := m.Discovery.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	var out []string
	for _, r := range list.APIResources {
		if r.Kind == "ServiceMonitor" || r.Kind == "PrometheusRule" {
			out = append(out, r.Kind)
		}
	}
	return out, nil
}

// metricsService returns the operator's metrics Service, the one the
// ServiceMonitor among objs scrapes, or nil without one. Its selector names
// the operator (app.kubernetes.io/name), so in a namespace shared by several
// operators (OLM's "operators") another's Service neither owns, and takes
// with it, our monitors nor is scraped as ours.
func (m *Monitors) metricsService(ctx context.Context, objs []*unstructured.Unstructured) (*corev1.Service, error) {
	var selector map[string]string
	for _, o := range objs {
		if o.GetKind() == "ServiceMonitor" {
			selector, _, _ = unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		}
	}
	if len(selector) == 0 {
		return nil, errors.New("config/prometheus: the operator's ServiceMonitor selects no Service by label")
	}
	var list corev1.ServiceList
	if err := m.Reader.List(ctx, &list, client.InNamespace(m.Namespace), client.MatchingLabels(selector)); err != nil {
		return nil, fmt.Errorf("finding the metrics Service: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	slices.SortFunc(list.Items, func(a, b corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	return &list.Items[0], nil
}

// Objects are the operator's ServiceMonitor and PrometheusRule of
// config/prometheus, named as kustomize names them, without a namespace.
func Objects() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	monitors, err := manifests.Decode(bytes.NewReader(monitorYAML))
	if err != nil {
		return nil, err
	}
	for _, o := range monitors {
		// The instancer's monitor is not the operator's business: the bundle has no instancer.
		if o.GetLabels()["control-plane"] == "controller-manager" {
			out = append(out, o)
		}
	}
	rules, err := manifests.Decode(bytes.NewReader(rulesYAML))
	if err != nil {
		return nil, err
	}
	out = append(out, rules...)
	for _, o := range out {
		o.SetName(namePrefix + o.GetName())
		o.SetNamespace("")
	}
	if len(out) != 2 {
		return nil, fmt.Errorf("config/prometheus: want the operator's ServiceMonitor and one PrometheusRule, found %d objects", len(out))
	}
	return out, nil
}
