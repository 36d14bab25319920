package policy

import (
	"errors"
	"maps"
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

// redis is the component of the fixtures with one.
const redis = "redis"

// instancePods selects every pod of the fixture's instance.
var instancePods = map[string]string{ctfv1alpha1.InstanceLabel: release}

func ownPods() networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: instancePods}}
}

// componentFixture is a valid release whose instance has a redis component beside its primary
// one: its Deployment, Service and NetworkPolicy, admitting the instance's own pods only.
type componentFixture struct {
	*fixture
	deploy *appsv1.Deployment
	svc    *corev1.Service
	np     *networkingv1.NetworkPolicy
}

func newComponentFixture(own bool) *componentFixture {
	fx := newFixture(own, false)
	labels := testLabels()
	labels[ctfv1alpha1.NameLabel] = redis
	labels[ctfv1alpha1.ComponentLabel] = redis
	selector := map[string]string{ctfv1alpha1.NameLabel: redis, ctfv1alpha1.AppInstanceLabel: release}
	restricted := security.For(nil, false)
	fx.in.Workloads = append(fx.in.Workloads, Workload{Name: redis, Labels: labels, Selector: selector, Security: &restricted, SecretEnv: []string{"flag"}})
	fx.in.InstancePods = instancePods
	name := identity.ComponentObject(release, redis)
	objMeta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: fx.in.Namespace, Labels: maps.Clone(labels)}
	}

	cf := &componentFixture{fixture: fx}
	cf.deploy = deployment()
	cf.deploy.ObjectMeta = objMeta()
	cf.deploy.Spec.Selector = &metav1.LabelSelector{MatchLabels: selector}
	cf.deploy.Spec.Template.Labels = maps.Clone(labels)
	cf.deploy.Spec.Template.Spec.SecurityContext = restricted.Pod.DeepCopy()
	cf.deploy.Spec.Template.Spec.Containers[0].SecurityContext = restricted.Container.DeepCopy()
	cf.deploy.Spec.Template.Spec.Containers[0].Name = redis // a component's main container is named after it
	cf.svc = service()
	cf.svc.ObjectMeta = objMeta()
	cf.svc.Spec.Selector = selector
	cf.np = &networkingv1.NetworkPolicy{
		TypeMeta:   typeMeta("networking.k8s.io/v1", "NetworkPolicy"),
		ObjectMeta: objMeta(),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selector},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{tcp(6379)}, From: []networkingv1.NetworkPolicyPeer{ownPods()}}},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{Ports: []networkingv1.NetworkPolicyPort{udp(53), tcp(53)}, To: []networkingv1.NetworkPolicyPeer{dnsPeerObj()}},
				{To: []networkingv1.NetworkPolicyPeer{ownPods()}},
			},
		},
	}
	// The primary component admits and reaches its components.
	fx.np.Spec.Ingress = append(fx.np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{ownPods()}})
	fx.egress(ownPods())
	return cf
}

// render writes the release with the component's objects, but those set to nil.
func (cf *componentFixture) render() []byte {
	for _, obj := range []any{cf.deploy, cf.svc, cf.np} {
		if !reflect.ValueOf(obj).IsNil() {
			cf.extra = append(cf.extra, obj)
		}
	}
	return cf.fixture.render()
}

func TestComponentsPass(t *testing.T) {
	for _, own := range []bool{false, true} {
		g := NewWithT(t)
		cf := newComponentFixture(own)
		g.Expect(Check(cf.render(), cf.in)).To(Succeed(), "own namespace: %v", own)
	}
}

// TestComponentsRefused: each component is held to its own identity, selector and security; only
// the primary one is reached from outside the instance; every component's objects are required.
func TestComponentsRefused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rule  string
		own   bool
		apply func(*componentFixture)
	}{
		{"a component's Service of type NodePort", ruleService, false, func(cf *componentFixture) { cf.svc.Spec.Type = corev1.ServiceTypeNodePort }},
		{"a component's Service of type LoadBalancer", ruleService, false, func(cf *componentFixture) {
			cf.in.Limits.AllowLoadBalancer = true
			cf.svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		}},
		{"a component admitting the outside", ruleNetworkIngress, false, func(cf *componentFixture) {
			cf.np.Spec.Ingress[0].From = append(cf.np.Spec.Ingress[0].From, networkingv1.NetworkPolicyPeer{IPBlock: outside()})
		}},
		{"a component admitting an organiser's namespace", ruleNetworkIngress, false, func(cf *componentFixture) {
			cf.np.Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{nsPeer(map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"})}
		}},
		{"a component reading the primary's secretEnv value", ruleSecretRef, false, func(cf *componentFixture) {
			cf.in.Workloads[0].SecretEnv = append(cf.in.Workloads[0].SecretEnv, "env.API_KEY")
			cf.deploy.Spec.Template.Spec.Containers[0].Env[1].ValueFrom.SecretKeyRef.Key = "env.API_KEY"
		}},
		{"a component reading the flag it is not delivered", ruleSecretRef, false, func(cf *componentFixture) {
			cf.in.Workloads[1].SecretEnv = []string{"redis.env.PASSWORD"}
		}},
		{"a component reading another's key", ruleSecretRef, false, func(cf *componentFixture) {
			cf.deploy.Spec.Template.Spec.Containers[0].Env[1].ValueFrom.SecretKeyRef.Key = "bot.env.PASSWORD"
		}},
		{"a component's Deployment left out", ruleRequired, false, func(cf *componentFixture) { cf.deploy = nil }},
		{"a component's NetworkPolicy left out", ruleRequired, false, func(cf *componentFixture) { cf.np = nil }},
		{"a component the template does not have", ruleName, false, func(cf *componentFixture) {
			cf.extra = append(cf.extra, withName(cf.deploy.DeepCopy(), release+"--miner"))
		}},
		{"a component selecting the primary one's pods", ruleSelector, false, func(cf *componentFixture) {
			cf.svc.Spec.Selector = testSelector()
		}},
		{"a component passing as the primary one", ruleLabels, false, func(cf *componentFixture) {
			cf.deploy.Spec.Template.Labels[ctfv1alpha1.NameLabel] = "challenge"
		}},
		{"a component running privileged beyond its section", ruleSecContext, false, func(cf *componentFixture) {
			cf.in.Workloads[1].Security = ptr.To(security.For(nil, false))
			cf.in.Workloads[1].Security.Profile = "privileged"
			cf.deploy.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}},
		{"another instance's pods as a peer", ruleNetworkEgress, false, func(cf *componentFixture) {
			cf.np.Spec.Egress[1].To = []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{ctfv1alpha1.InstanceLabel: "victim"}}}}
		}},
		{"the instance's pods in another namespace", ruleNetworkEgress, false, func(cf *componentFixture) {
			cf.np.Spec.Egress[1].To[0].NamespaceSelector = &metav1.LabelSelector{}
		}},
		{"a namespace enforcing less than a component needs", ruleNamespace, true, func(cf *componentFixture) {
			priv := security.For(nil, false)
			priv.Profile = "privileged"
			cf.in.Workloads[1].Security = &priv
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cf := newComponentFixture(tt.own)
			tt.apply(cf)
			err := Check(cf.render(), cf.in)
			var v *Violation
			g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
			g.Expect(v.Rule).To(Equal(tt.rule), v.Error())
		})
	}
}

// TestInstancePodsNeedComponents: without components, no NetworkPolicy may name the instance's
// pods as a peer: an instance of one component has no one to reach.
func TestInstancePodsNeedComponents(t *testing.T) {
	g := NewWithT(t)
	fx := newFixture(false, false)
	fx.egress(ownPods())
	err := Check(fx.render(), fx.in)
	var v *Violation
	g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
	g.Expect(v.Rule).To(Equal(ruleNetworkEgress))
}

// TestRecordsOfComponents: a stored release record may list the objects of components of any
// name (the template may have changed since) but never another instance's objects.
func TestRecordsOfComponents(t *testing.T) {
	g := NewWithT(t)
	cf := newComponentFixture(false)
	manifest := cf.render()
	record := cf.in
	record.Workloads, record.AnyComponent = record.Workloads[:1], true
	g.Expect(CheckIdentity(manifest, record)).To(Succeed())
	record.AnyComponent = false
	g.Expect(CheckIdentity(manifest, record)).To(MatchError(ContainSubstring(ruleName)), "without AnyComponent, a component's name is not the release's")
	cf = newComponentFixture(false)
	cf.deploy.Name = "victim--redis"
	record.AnyComponent = true
	g.Expect(CheckIdentity(cf.render(), record)).To(MatchError(ContainSubstring(ruleName)), "another instance's component")
}

func withName(d *appsv1.Deployment, name string) *appsv1.Deployment {
	d.Name = name
	return d
}

// TestSharedServicePeers: an egress rule may name the pods of a shared Service exactly, in its
// namespace and with ports, and no other pods of another namespace.
func TestSharedServicePeers(t *testing.T) {
	checker := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ctf-organiser"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "checker"}},
	}
	for _, tt := range []struct {
		name  string
		rule  networkingv1.NetworkPolicyEgressRule
		allow bool
	}{
		{"the shared Service's pods on its ports", networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{checker}, Ports: []networkingv1.NetworkPolicyPort{tcp(80)}}, true},
		{"on every port", networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{checker}}, false},
		{"every pod of its namespace", networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: checker.NamespaceSelector}}, Ports: []networkingv1.NetworkPolicyPort{tcp(80)}}, false},
		{"other pods of its namespace", networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: checker.NamespaceSelector,
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "vault"}}}}, Ports: []networkingv1.NetworkPolicyPort{tcp(80)}}, false},
		{"its selector in another namespace", networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}}, PodSelector: checker.PodSelector}},
			Ports: []networkingv1.NetworkPolicyPort{tcp(80)}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fx := newFixture(false, false)
			fx.in.SharedServices = []SharedPeer{{Namespace: "ctf-organiser", Selector: map[string]string{"app": "checker"}}}
			fx.np.Spec.Egress = append(fx.np.Spec.Egress, tt.rule)
			err := Check(fx.render(), fx.in)
			if tt.allow {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var v *Violation
			g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
			g.Expect(v.Rule).To(Equal(ruleNetworkEgress))
		})
	}
}

// TestExposedComponents: a component its template exposes may have a Service of another type, admit
// the outside and have an Ingress of its own host leading to its own Service; one not exposed none
// of these.
func TestExposedComponents(t *testing.T) {
	const redisHost = "web-team1-redis-0123456789.ctf.example"
	ingress := func(host, backend string) *networkingv1.Ingress {
		ing := ingressObj()
		ing.Name, ing.Labels = identity.ComponentObject(release, redis), maps.Clone(newComponentFixture(false).in.Workloads[1].Labels)
		ing.Spec.Rules[0].Host = host
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = backend
		return ing
	}
	expose := func(cf *componentFixture) {
		cf.in.Workloads[1].Exposed, cf.in.Workloads[1].Host = true, redisHost
		cf.svc.Spec.Type = corev1.ServiceTypeNodePort
		cf.np.Spec.Ingress = append(cf.np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{IPBlock: outside()}}})
	}
	for _, tt := range []struct {
		name  string
		apply func(*componentFixture)
		rule  string // "" passes
	}{
		{"exposed, with its own Ingress", func(cf *componentFixture) {
			expose(cf)
			cf.extra = append(cf.extra, ingress(redisHost, identity.ComponentObject(release, redis)))
		}, ""},
		{"an Ingress for a component not exposed", func(cf *componentFixture) {
			cf.extra = append(cf.extra, ingress(redisHost, identity.ComponentObject(release, redis)))
		}, ruleIngress},
		{"exposed, on the primary component's host", func(cf *componentFixture) {
			expose(cf)
			cf.extra = append(cf.extra, ingress(host, identity.ComponentObject(release, redis)))
		}, ruleIngressHost},
		{"exposed, leading to the primary component", func(cf *componentFixture) {
			expose(cf)
			cf.extra = append(cf.extra, ingress(redisHost, release))
		}, ruleIngress},
		{"a component not exposed admitting the outside", func(cf *componentFixture) {
			cf.np.Spec.Ingress = append(cf.np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{IPBlock: outside()}}})
		}, ruleNetworkIngress},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cf := newComponentFixture(false)
			cf.withIngress = false
			tt.apply(cf)
			err := Check(cf.render(), cf.in)
			if tt.rule == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var v *Violation
			g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
			g.Expect(v.Rule).To(Equal(tt.rule), v.Error())
		})
	}
}

// TestSharedInstanceIngress: a shared instance's NetworkPolicy may admit the
// pods of every instance, exactly so; no other instance's may, and no
// wider or narrower peer passes for it.
func TestSharedInstanceIngress(t *testing.T) {
	exists := func(key string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}
	}
	everyInstance := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: exists(ctfv1alpha1.InstanceLabel)}
	for _, tt := range []struct {
		name   string
		shared bool
		peer   networkingv1.NetworkPolicyPeer
		allow  bool
	}{
		{"a shared instance admits every instance's pods", true, everyInstance, true},
		{"a team's instance does not", false, everyInstance, false},
		{"every pod of every namespace", true, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{}}, false},
		{"pods of another label", true, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: exists("app")}, false},
		{"instances of one namespace only", true, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{nameLabel: "kube-system"}}, PodSelector: exists(ctfv1alpha1.InstanceLabel)}, false},
		{"instances with an ipBlock", true, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: exists(ctfv1alpha1.InstanceLabel),
			IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fx := newFixture(false, false)
			if tt.shared {
				fx.in.EveryInstancePod = ctfv1alpha1.InstanceLabel
			}
			fx.ingressFrom(tt.peer)
			err := Check(fx.render(), fx.in)
			if tt.allow {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var v *Violation
			g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
			g.Expect(v.Rule).To(Equal(ruleNetworkIngress))
		})
	}
}
