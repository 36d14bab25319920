package policy

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// The instance every test renders: one participant's instance of the "web" challenge.
const (
	release    = "web-team1"
	namespace  = "ctf-team1"
	flagSecret = "web-team1-flag"
	host       = "web-team1.ctf.example"
)

// internalCIDRs are the organiser's internal ranges, as the chart's values list them.
var internalCIDRs = []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"}

func testLabels() map[string]string {
	return map[string]string{
		ctfv1alpha1.NameLabel:              "challenge",
		ctfv1alpha1.AppInstanceLabel:       release,
		ctfv1alpha1.ManagedByLabel:         "challenge-operator",
		"helm.sh/chart":                    "challenge-0.1.0",
		ctfv1alpha1.InstanceLabel:          release,
		ctfv1alpha1.InstanceNamespaceLabel: namespace,
		ctfv1alpha1.ParticipantLabel:       "team1",
		ctfv1alpha1.ChallengeLabel:         "web",
	}
}

func testSelector() map[string]string {
	return map[string]string{ctfv1alpha1.NameLabel: "challenge", ctfv1alpha1.AppInstanceLabel: release}
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func testInstance() Instance {
	return Instance{
		Release:    release,
		Namespace:  namespace,
		Labels:     testLabels(),
		Workloads:  []Workload{{Labels: testLabels(), Selector: testSelector(), Exposed: true, Host: host, SecretEnv: []string{"flag"}}},
		FlagSecret: flagSecret,
		Limits: Limits{
			CPU:                   resource.MustParse("1"),
			Memory:                resource.MustParse("512Mi"),
			MaxReplicas:           2,
			IngressDomain:         "ctf.example",
			IngressClasses:        []string{"nginx"},
			TLSSecrets:            []string{"wildcard-tls"},
			Gateways:              []types.NamespacedName{{Namespace: "gateways", Name: "ctf"}},
			InternalCIDRs:         prefixes(internalCIDRs...),
			IngressFromNamespaces: []string{"ingress-nginx"},
		},
		Keys:       Keys{Allowed: []string{"service.beta.kubernetes.io/"}},
		Quota:      quota().Spec.Hard,
		LimitRange: limitRange().Spec.Limits,
	}
}

// sourcePart is one template's object, rendered under its "# Source:" comment.
type sourcePart struct {
	source string
	obj    any
}

// fixture is a release as the chart renders it, kept as typed objects so tests can break one
// field at a time, plus raw edits for what typed objects cannot say.
type fixture struct {
	in         Instance
	deploy     *appsv1.Deployment
	svc        *corev1.Service
	sa         *corev1.ServiceAccount
	np         *networkingv1.NetworkPolicy
	secret     *corev1.Secret
	ns         *corev1.Namespace
	quota      *corev1.ResourceQuota
	limitRange *corev1.LimitRange
	ing        *networkingv1.Ingress

	withNamespace bool                             // render ns, quota and limitRange
	withIngress   bool                             // render ing
	omit          map[string]bool                  // kinds left out, as a hook annotation would
	edits         map[string][]func(string) string // raw edits of one kind's document
	extra         []any                            // further documents: objects, or raw strings
	post          []func(string) string            // raw edits of the whole manifest
}

// newFixture is a valid release; own adds a namespace of its own, ingress an Ingress.
func newFixture(own, ingress bool) *fixture {
	fx := &fixture{
		in: testInstance(), deploy: deployment(), svc: service(), sa: serviceAccount(),
		np: networkPolicy(), secret: flagSecretObject(), ns: namespaceObj(), quota: quota(),
		limitRange: limitRange(), ing: ingressObj(),
		omit: map[string]bool{}, edits: map[string][]func(string) string{},
	}
	fx.setOwnNamespace(own)
	fx.withIngress = ingress
	return fx
}

// setOwnNamespace switches the instance and the rendering to a namespace of its own.
func (fx *fixture) setOwnNamespace(own bool) {
	fx.in.OwnNamespace = own
	fx.withNamespace = own
}

// parts lists the rendered objects in the order Helm writes them.
func (fx *fixture) parts() []sourcePart {
	ps := []sourcePart{}
	if fx.withNamespace {
		ps = append(ps, sourcePart{"namespace.yaml", fx.ns}, sourcePart{"namespace.yaml", fx.quota}, sourcePart{"namespace.yaml", fx.limitRange})
	}
	ps = append(ps,
		sourcePart{"serviceaccount.yaml", fx.sa}, sourcePart{"flag-secret.yaml", fx.secret}, sourcePart{"service.yaml", fx.svc},
		sourcePart{"deployment.yaml", fx.deploy}, sourcePart{"networkpolicy.yaml", fx.np})
	if fx.withIngress {
		ps = append(ps, sourcePart{"ingress.yaml", fx.ing})
	}
	for _, e := range fx.extra {
		ps = append(ps, sourcePart{"extra.yaml", e})
	}
	return ps
}

// render writes the manifest as Helm does: "---", a "# Source:" comment, the object. An object
// set to nil is left out, as a hook annotation would hide it.
func (fx *fixture) render() []byte {
	var b strings.Builder
	for _, p := range fx.parts() {
		if v := reflect.ValueOf(p.obj); v.Kind() == reflect.Pointer && v.IsNil() {
			continue
		}
		kind, doc := marshal(p.obj)
		if fx.omit[kind] {
			continue
		}
		for _, edit := range fx.edits[kind] {
			doc = edit(doc)
		}
		b.WriteString("---\n# Source: challenge/templates/" + p.source + "\n" + doc + "\n")
	}
	out := b.String()
	for _, edit := range fx.post {
		out = edit(out)
	}
	return []byte(out)
}

// marshal returns an object's kind and YAML; a raw string is its own document, of no kind.
func marshal(obj any) (string, string) {
	if s, ok := obj.(string); ok {
		return "", s
	}
	y, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var h struct{ Kind string }
	if err := yaml.Unmarshal(y, &h); err != nil {
		panic(err)
	}
	return h.Kind, string(y)
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: testLabels()}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func deployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: meta(release),
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To[int32](1),
			RevisionHistoryLimit: ptr.To[int32](1),
			Selector:             &metav1.LabelSelector{MatchLabels: testSelector()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: testLabels()},
				Spec:       podSpec(),
			},
		},
	}
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName:           release,
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](1000),
			RunAsGroup:     ptr.To[int64](1000),
			FSGroup:        ptr.To[int64](1000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{container()},
		Volumes: []corev1.Volume{
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}}},
			{Name: "flag", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: flagSecret, DefaultMode: ptr.To[int32](0o444)}}},
		},
	}
}

func container() corev1.Container {
	return corev1.Container{
		Name:            "challenge",
		Image:           "registry.ctf.example/web:1.0",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Ports:           []corev1.ContainerPort{{Name: "main", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			{Name: "MODE", Value: "ctf"},
			{Name: "FLAG", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: flagSecret}, Key: "flag"}}},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("main")}},
			PeriodSeconds: 2,
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Privileged:               ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tmp", MountPath: "/tmp"},
			{Name: "flag", MountPath: "/flag/flag.txt", SubPath: "flag", ReadOnly: true},
		},
	}
}

func service() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   typeMeta("v1", "Service"),
		ObjectMeta: meta(release),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: testSelector(),
			Ports: []corev1.ServicePort{{
				Name: "main", Port: 8080, TargetPort: intstr.FromString("main"), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

func serviceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:                     typeMeta("v1", "ServiceAccount"),
		ObjectMeta:                   meta(release),
		AutomountServiceAccountToken: ptr.To(false),
	}
}

func flagSecretObject() *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   typeMeta("v1", "Secret"),
		ObjectMeta: meta(flagSecret),
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"flag": "CTF{team1-3f9a}"},
	}
}

func namespaceObj() *corev1.Namespace {
	m := meta(namespace)
	m.Namespace = ""
	m.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	m.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	return &corev1.Namespace{TypeMeta: typeMeta("v1", "Namespace"), ObjectMeta: m}
}

func quota() *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		TypeMeta:   typeMeta("v1", "ResourceQuota"),
		ObjectMeta: meta(release),
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"pods": resource.MustParse("4"), "limits.cpu": resource.MustParse("2"), "limits.memory": resource.MustParse("2Gi"),
		}},
	}
}

func limitRange() *corev1.LimitRange {
	return &corev1.LimitRange{
		TypeMeta:   typeMeta("v1", "LimitRange"),
		ObjectMeta: meta(release),
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}},
	}
}

func ingressObj() *networkingv1.Ingress {
	return &networkingv1.Ingress{
		TypeMeta:   typeMeta("networking.k8s.io/v1", "Ingress"),
		ObjectMeta: meta(release),
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: release, Port: networkingv1.ServiceBackendPort{Name: "main"},
						}},
					}},
				}},
			}},
		},
	}
}

// outside is the IPv4 internet: everything but the organiser's and the default internal ranges.
func outside() *networkingv1.IPBlock {
	return &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: append(slices.Clone(internalCIDRs), defaultCIDRs(false)...)}
}

// outside6 is the IPv6 internet: everything but the default internal ranges.
func outside6() *networkingv1.IPBlock {
	return &networkingv1.IPBlock{CIDR: "::/0", Except: defaultCIDRs(true)}
}

// defaultCIDRs are DefaultInternalCIDRs of one family, as strings.
func defaultCIDRs(v6 bool) []string {
	var out []string
	for _, p := range DefaultInternalCIDRs {
		if p.Addr().Is6() == v6 {
			out = append(out, p.String())
		}
	}
	return out
}

func tcp(port int) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(int32(port)))}
}

func udp(port int) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(int32(port)))}
}

func dnsPeerObj() networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{nameLabel: "kube-system"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
	}
}

func networkPolicy() *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   typeMeta("networking.k8s.io/v1", "NetworkPolicy"),
		ObjectMeta: meta(release),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: testSelector()},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{tcp(8080)},
				From: []networkingv1.NetworkPolicyPeer{
					{IPBlock: outside()},
					{IPBlock: outside6()},
					{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{nameLabel: "ingress-nginx"}}},
				},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{Ports: []networkingv1.NetworkPolicyPort{udp(53), tcp(53)}, To: []networkingv1.NetworkPolicyPeer{dnsPeerObj()}},
				{To: []networkingv1.NetworkPolicyPeer{{IPBlock: outside()}, {IPBlock: outside6()}}},
			},
		},
	}
}

// Shorthands for the parts tests break most.
func (fx *fixture) pod() *corev1.PodSpec        { return &fx.deploy.Spec.Template.Spec }
func (fx *fixture) ctr() *corev1.Container      { return &fx.pod().Containers[0] }
func (fx *fixture) podMeta() *metav1.ObjectMeta { return &fx.deploy.Spec.Template.ObjectMeta }

// edit adds a raw edit of one kind's document.
func (fx *fixture) edit(kind string, f func(string) string) {
	fx.edits[kind] = append(fx.edits[kind], f)
}

// egress appends an egress rule reaching peers.
func (fx *fixture) egress(peers ...networkingv1.NetworkPolicyPeer) {
	fx.np.Spec.Egress = append(fx.np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{To: peers})
}

// ingressFrom appends an ingress rule admitting peers.
func (fx *fixture) ingressFrom(peers ...networkingv1.NetworkPolicyPeer) {
	fx.np.Spec.Ingress = append(fx.np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: peers})
}

func ipBlock(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
}

func annotate(m *metav1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}
