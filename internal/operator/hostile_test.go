package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// The hostile table: Challenges and ChallengeTemplates written as an attacker
// (or a hurried organiser) would, each with its exact outcome: refused at
// admission naming the field, Error/PolicyViolation with nothing applied, or
// rendered safely. After each, nothing exists outside the instance and
// nothing is left once it is deleted.

// outcome is what a hostile input must lead to.
type outcome int

const (
	// refused: the API server refuses it at admission, naming the field.
	refused outcome = iota
	// violation: accepted, then Error with reason PolicyViolation and nothing applied.
	violation
	// safe: rendered, Running, and the check holds.
	safe
)

// injection would add a privileged Deployment in kube-system to the release
// if any value were written into the manifest unquoted.
const injection = "x\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: pwned\n  namespace: kube-system\nspec:\n  template:\n    spec:\n      hostPID: true\n"

// lineBreaks are every character YAML (or a terminal) treats as a line break or control.
var lineBreaks = map[string]string{
	"LF": "\n", "CR": "\r", "NEL": "\u0085", "LS": "\u2028", "PS": "\u2029", "NUL": "\x00", "TAB": "\t", "VT": "\v", "FF": "\f", "ESC": "\x1b",
}

type hostileChallenge struct {
	name string
	// tmpl, when set, makes the Challenge an instance of a fresh template with these settings.
	tmpl func(*ctfv1alpha1.ChallengeTemplateSpec)
	// mutate edits the Challenge; raw edits its spec as JSON, for what the typed client cannot write.
	mutate func(*ctfv1alpha1.Challenge)
	raw    func(spec map[string]any)
	want   outcome
	// field is what the refusal or the status message must name.
	field string
	// check is what must hold of a safely rendered instance.
	check func(g Gomega, ch *ctfv1alpha1.Challenge)
}

func withValues(s string) func(*ctfv1alpha1.Challenge) {
	return func(c *ctfv1alpha1.Challenge) { c.Spec.Values = harness.Values(s) }
}

func hostileChallenges() []hostileChallenge {
	cases := []hostileChallenge{
		// Injection through each string value that reaches the chart.
		{name: "tmpSizeLimit injection", raw: setValue("tmpSizeLimit", injection), want: refused, field: "spec.values.tmpSizeLimit"},
		{name: "imagePullSecrets injection", raw: setValue("imagePullSecrets", []any{injection}), want: refused, field: "spec.values.imagePullSecrets[0]"},
		{name: "ingressClassName injection", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, IngressClassName: injection}
		}, want: refused, field: "spec.expose.ingressClassName"},
		{name: "values ingressClassName injection", raw: setValue("expose", map[string]any{"ingressClassName": injection}), want: refused, field: "spec.values.expose.ingressClassName"},
		{name: "a host chosen by the platform", raw: func(s map[string]any) {
			s["expose"] = map[string]any{"type": "Ingress", "host": "victim.ctf.example"}
		}, want: refused, field: `unknown field "spec.expose.host"`},
		{name: "the instance's address forged in env", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "CHALLENGE_URL", Value: "http://victim.ctf.example/"}}
		}, want: refused, field: "are set by the operator to the instance's and its components' addresses"},
		{name: "values host injection", raw: setValue("expose", map[string]any{"host": injection}), want: refused, field: `unknown field "spec.values.expose.host"`},
		{name: "image injection", mutate: func(c *ctfv1alpha1.Challenge) { c.Spec.Image = "nginx" + injection }, want: refused, field: "spec.image"},
		{name: "values image injection", raw: setValue("image", "nginx"+injection), want: refused, field: "spec.values.image"},
		{name: "template name injection", raw: func(s map[string]any) { s["template"] = "web" + injection }, want: refused, field: "spec.template"},
		{name: "env name injection", mutate: func(c *ctfv1alpha1.Challenge) { c.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "A\nB", Value: "1"}} }, want: refused, field: "spec.env[0].name"},
		{name: "port name injection", mutate: func(c *ctfv1alpha1.Challenge) { c.Spec.Ports[0].Name = "http\n- name: x" }, want: refused, field: "spec.ports[0].name"},
		{name: "participant injection", mutate: func(c *ctfv1alpha1.Challenge) { c.Spec.Participant = "team\n---" }, want: refused, field: "spec.participant"},
		{name: "label key injection", raw: setValue("podLabels", map[string]any{"a\nhostPID": "true"}), want: refused, field: "spec.values.podLabels"},
		{name: "annotation key with a space", raw: setValue("podAnnotations", map[string]any{"a b": "c"}), want: refused, field: "spec.values.podAnnotations"},

		// Components are the organiser's: no Challenge names one, nor its objects' separator.
		{name: "a component smuggled through values", raw: setValue("components", []any{map[string]any{"name": "miner", "image": "evil.example/miner"}}),
			want: refused, field: `unknown field "spec.values.components"`},
		{name: "a component on the Challenge", raw: func(s map[string]any) {
			s["components"] = []any{map[string]any{"name": "miner", "image": "evil.example/miner"}}
		}, want: refused, field: `unknown field "spec.components"`},
		{name: "component hosts forged through values", raw: setValue("hosts", []any{map[string]any{"name": "REDIS_HOST", "value": "victim"}}),
			want: refused, field: `unknown field "spec.values.hosts"`},
		{name: "a name that could be another instance's component", mutate: func(c *ctfv1alpha1.Challenge) { c.Name = "web--redis" },
			want: refused, field: `metadata.name must not contain "--"`},

		{name: "a component beyond the admin's flags", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Components = []ctfv1alpha1.Component{{Name: "bot", Image: "registry.example/ctf/bot:1",
				Security: &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true)}}}
		}, want: violation, field: "component bot: profile privileged is above --max-pod-security=baseline"},

		// A route only on a Gateway the admin lists.
		{name: "gateway name injection", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute, Gateway: &ctfv1alpha1.GatewayRef{Namespace: "gateways", Name: "ctf" + injection}}
		}, want: refused, field: "spec.expose.gateway.name"},
		{name: "a route without --gateways", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeTLSRoute}
		}, want: violation, field: "expose.type TLSRoute needs a Gateway of the operator's --gateways, which lists none"},

		// Enforced values cannot even be expressed: a strict client is told so.
		{name: "flag forged through values", raw: setValue("flag", map[string]any{"enabled": true, "secretName": "victim-flag"}), want: refused, field: `unknown field "spec.values.flag"`},
		{name: "participant through values", raw: setValue("participant", "victim"), want: refused, field: `unknown field "spec.values.participant"`},
		{name: "namespacePerInstance through values", raw: setValue("namespacePerInstance", map[string]any{"enabled": true, "name": "kube-system"}), want: refused, field: `unknown field "spec.values.namespacePerInstance"`},
		{name: "egress opened through values", raw: setValue("networkPolicy", map[string]any{"egress": []any{map[string]any{"name": "all", "cidr": "0.0.0.0/0"}}}), want: refused, field: `unknown field "spec.values.networkPolicy"`},
		{name: "internal ranges emptied through values", raw: setValue("networkPolicy", map[string]any{"internalCIDRs": []any{}}), want: refused, field: `unknown field "spec.values.networkPolicy"`},
		{name: "resource claims", raw: setValue("resources", map[string]any{"claims": []any{map[string]any{"name": "gpu"}}}), want: refused, field: `unknown field "spec.values.resources.claims"`},

		// Resource exhaustion and undecodable values.
		{name: "ten replicas and one more", raw: setValue("replicas", 11), want: refused, field: "spec.values.replicas"},
		{name: "zero replicas", raw: setValue("replicas", 0), want: refused, field: "spec.values.replicas"},
		{name: "limits removed with null", raw: setValue("resources", map[string]any{"limits": nil}), want: safe, check: limitsSet},
		{name: "typed resources with only requests", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Resources = &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{CPU: q("100m")}}
		}, want: safe, check: limitsSet},
		{name: "quantity that does not parse", raw: setValue("resources", map[string]any{"limits": map[string]any{"cpu": "1e999999999999"}}), want: refused, field: "spec.values.resources.limits.cpu"},
		{name: "negative quantity", raw: setValue("resources", map[string]any{"limits": map[string]any{"memory": "-1Gi"}}), want: refused, field: "spec.values.resources.limits.memory"},
		{name: "quantity with two points", raw: func(s map[string]any) {
			s["resources"] = map[string]any{"limits": map[string]any{"cpu": "1.2.3"}}
		}, want: refused, field: "spec.resources.limits.cpu"},
		{name: "tmpSizeLimit of 999999999999999E", raw: setValue("tmpSizeLimit", "999999999999999E"), want: refused, field: "spec.values.tmpSizeLimit"},
		{name: "ephemeral-storage of 999999999999999E", raw: setValue("resources", map[string]any{"limits": map[string]any{"ephemeral-storage": "999999999999999E"}}), want: refused, field: "spec.values.resources.limits.ephemeral-storage"},
		{name: "typed ephemeral-storage above 1Ti", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Resources = &ctfv1alpha1.Resources{Requests: &ctfv1alpha1.ResourceAmounts{EphemeralStorage: q("2Ti")}}
		}, want: refused, field: "spec.resources.requests.ephemeral-storage"},
		{name: "lifetime overflowing time.Duration", raw: func(s map[string]any) { s["lifetime"] = "3000000h" }, want: refused, field: "spec.lifetime"},
		{name: "lifetime of 31 days", raw: func(s map[string]any) { s["lifetime"] = "744h" }, want: refused, field: "spec.lifetime"},
		{name: "lifetime of zero", raw: func(s map[string]any) { s["lifetime"] = "0s" }, want: refused, field: "spec.lifetime"},
		{name: "lifetime with a line break", raw: func(s map[string]any) { s["lifetime"] = "1h\n" }, want: refused, field: "spec.lifetime"},
		{name: "renewedAt in lower case", raw: func(s map[string]any) { s["renewedAt"] = "2026-11-23t10:00:00z" }, want: refused, field: "spec.renewedAt"},
		{name: "renewedAt on February 31", raw: func(s map[string]any) { s["renewedAt"] = "2026-02-31T10:00:00Z" }, want: refused, field: "spec.renewedAt"},
		{name: "renewedAt at hour 24", raw: func(s map[string]any) { s["renewedAt"] = "2026-11-23T24:00:00Z" }, want: refused, field: "spec.renewedAt"},
		{name: "renewedAt with a space", raw: func(s map[string]any) { s["renewedAt"] = "2026-11-23 10:00:00Z" }, want: refused, field: "spec.renewedAt"},
		{name: "run as root", raw: setValue("runAsUser", 0), want: refused, field: `unknown field "spec.values.runAsUser"`},
		{name: "run as group root", raw: setValue("runAsGroup", 0), want: refused, field: `unknown field "spec.values.runAsGroup"`},
		// Security settings are the organiser's template's alone.
		{name: "a security section on a Challenge", raw: func(s map[string]any) {
			s["security"] = map[string]any{"profile": "privileged", "privileged": true}
		}, want: refused, field: `unknown field "spec.security"`},
		{name: "a security section through values", raw: setValue("security", map[string]any{"profile": "privileged"}),
			want: refused, field: `unknown field "spec.values.security"`},
		{name: "a runtime class through values", raw: setValue("runtimeClassName", "runc"), want: refused, field: `unknown field "spec.values.runtimeClassName"`},
		{name: "a command on a Challenge", raw: func(s map[string]any) { s["command"] = []any{"/bin/sh"} }, want: refused, field: `unknown field "spec.command"`},
		{name: "a command through values", raw: setValue("command", []any{"/bin/sh"}), want: refused, field: `unknown field "spec.values.command"`},
		{name: "files on a Challenge", raw: func(s map[string]any) {
			s["files"] = []any{map[string]any{"path": "/etc/passwd", "content": "root::0:0::/:/bin/sh"}}
		}, want: refused, field: `unknown field "spec.files"`},
		{name: "an organiser's Secret in a Challenge's environment", raw: func(s map[string]any) {
			s["secretEnv"] = []any{map[string]any{"name": "K", "secret": map[string]any{"namespace": "ctf-organiser", "name": "flag-key", "key": "key"}}}
		}, want: refused, field: `unknown field "spec.secretEnv"`},
		{name: "probes through values", raw: setValue("probes", map[string]any{"liveness": map[string]any{"httpGet": map[string]any{"host": "169.254.169.254"}}}),
			want: refused, field: `unknown field "spec.values.probes"`},
		{name: "scratch directories through values", raw: setValue("scratch", []any{map[string]any{"path": "/", "sizeLimit": "1Ti"}}),
			want: refused, field: `unknown field "spec.values.scratch"`},
		{name: "a device through values", raw: setValue("resources", map[string]any{"limits": map[string]any{"devices.kubevirt.io/kvm": "1"}}),
			want: refused, field: `unknown field "spec.values.resources.limits.devices.kubevirt.io/kvm"`},
		{name: "a node through values", raw: setValue("nodeSelector", map[string]any{"kubernetes.io/hostname": "control-plane"}),
			want: refused, field: `unknown field "spec.values.nodeSelector"`},
		{name: "termination grace through values", raw: setValue("terminationGracePeriodSeconds", 3600), want: refused, field: `unknown field "spec.values.terminationGracePeriodSeconds"`},
		{name: "a fixed clusterIP through values", raw: setValue("expose", map[string]any{"clusterIP": "None"}), want: refused, field: `unknown field "spec.values.expose.clusterIP"`},
		{name: "thirty-three annotations", raw: setValue("podAnnotations", manyKeys(33)), want: refused, field: "spec.values.podAnnotations"},
		{name: "sixty-five variables", mutate: func(c *ctfv1alpha1.Challenge) {
			for i := range 65 {
				c.Spec.Env = append(c.Spec.Env, ctfv1alpha1.EnvVar{Name: fmt.Sprintf("V%d", i)})
			}
		}, want: refused, field: "spec.env"},
		{name: "unknown pull policy", raw: setValue("imagePullPolicy", "Sometimes"), want: refused, field: "spec.values.imagePullPolicy"},

		// Label and annotation takeover.
		{name: "become the DNS peer", mutate: withValues(`{"podLabels": {"k8s-app": "kube-dns"}}`), want: violation, field: `"k8s-app"`},
		{name: "take another participant's label", mutate: withValues(`{"podLabels": {"ctf.challenge-operator.io/participant": "victim"}}`), want: violation, field: ctfv1alpha1.ParticipantLabel},
		{name: "take another instance's selector label", mutate: withValues(`{"podLabels": {"app.kubernetes.io/instance": "victim"}}`), want: violation, field: ctfv1alpha1.AppInstanceLabel},
		{name: "AppArmor unconfined", mutate: withValues(`{"podAnnotations": {"container.apparmor.security.beta.kubernetes.io/challenge": "unconfined"}}`), want: violation, field: "apparmor"},
		{name: "seccomp unconfined", mutate: withValues(`{"podAnnotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}`), want: violation, field: "seccomp"},
		{name: "keep the Service after deletion", mutate: withValues(`{"expose": {"annotations": {"helm.sh/resource-policy": "keep"}}}`), want: violation, field: "helm.sh/resource-policy"},
		{name: "turn the Service into a hook", mutate: withValues(`{"expose": {"annotations": {"helm.sh/hook": "pre-install"}}}`), want: violation, field: "helm.sh/hook"},
		{name: "claim another release", mutate: withValues(`{"expose": {"annotations": {"meta.helm.sh/release-name": "victim"}}}`), want: violation, field: "meta.helm.sh/release-name"},
		// Other controllers' keys: an address from a shared pool, an ingress controller's
		// configuration snippet, a reissued shared certificate, a runtime's devices.
		{name: "take a load balancer address from MetalLB's pool", mutate: withValues(`{"expose": {"annotations": {"metallb.universe.tf/address-pool": "organisers"}}}`), want: violation, field: "metallb.universe.tf/address-pool"},
		{name: "take Cilium's load balancer addresses", mutate: withValues(`{"expose": {"annotations": {"lbipam.cilium.io/ips": "10.0.0.1"}}}`), want: violation, field: "lbipam.cilium.io/ips"},
		{name: "an NGINX configuration snippet", mutate: withValues(`{"expose": {"annotations": {"nginx.org/server-snippets": "location / {}"}}}`), want: violation, field: "nginx.org/server-snippets"},
		{name: "a HAProxy configuration snippet", mutate: withValues(`{"expose": {"annotations": {"haproxy.org/backend-config-snippet": "x"}}}`), want: violation, field: "haproxy.org/backend-config-snippet"},
		{name: "Kong plugins", mutate: withValues(`{"expose": {"annotations": {"konghq.com/plugins": "x"}}}`), want: violation, field: "konghq.com/plugins"},
		{name: "reissue the shared certificate", mutate: withValues(`{"expose": {"annotations": {"cert-manager.io/cluster-issuer": "letsencrypt"}}}`), want: violation, field: "cert-manager.io/cluster-issuer"},
		{name: "CRI-O devices", mutate: withValues(`{"podAnnotations": {"io.kubernetes.cri-o.Devices": "/dev/kvm"}}`), want: violation, field: "io.kubernetes.cri-o.Devices"},
		{name: "Kata kernel parameters", mutate: withValues(`{"podAnnotations": {"io.katacontainers.config.hypervisor.kernel_params": "x"}}`), want: violation, field: "io.katacontainers.config.hypervisor.kernel_params"},
		{name: "a gVisor flag", mutate: withValues(`{"podAnnotations": {"dev.gvisor.flag.net-raw": "true"}}`), want: violation, field: "dev.gvisor.flag.net-raw"},
		{name: "a controller's label", mutate: withValues(`{"podLabels": {"sidecar.istio.io/inject": "true"}}`), want: violation, field: "sidecar.istio.io/inject"},
		{name: "AppArmor through a template's allowlist", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.OverridableValues = []ctfv1alpha1.ValuePath{"env", "podAnnotations"}
		}, mutate: withValues(`{"podAnnotations": {"container.apparmor.security.beta.kubernetes.io/challenge": "unconfined"}}`), want: violation, field: "apparmor"},

		// What the post-render gate refuses.
		{name: "three replicas", mutate: withValues(`{"replicas": 3}`), want: violation, field: "replicas"},
		{name: "a LoadBalancer nobody allowed", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeLoadBalancer}
		}, want: violation, field: "LoadBalancer"},
		{name: "an Ingress class nobody allowed", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, IngressClassName: "internal"}
		}, want: violation, field: "ingress-class"},
		{name: "CPU limit above the ceiling", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: q("4")}}
		}, want: violation, field: "resources"},
		{name: "memory limit above the ceiling", mutate: withValues(`{"resources": {"limits": {"memory": "8Gi"}}}`), want: violation, field: "resources"},
		{name: "CPU above the template's own ceiling", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Policy = &ctfv1alpha1.InstancePolicy{MaxCPU: q("100m")}
			s.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{CPU: q("200m")}}
		}, want: violation, field: "resources"},
		{name: "scratch above the disk ceiling", mutate: withValues(`{"tmpSizeLimit": "2Gi"}`), want: violation, field: `emptyDir "tmp": sizeLimit 2Gi is above the ceiling 1Gi`},
		{name: "ephemeral-storage above the disk ceiling", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{EphemeralStorage: q("2Gi")}}
		}, want: violation, field: "ephemeral-storage limit 2Gi is above the ceiling 1Gi"},
		{name: "scratch above the template's lowered disk ceiling", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Policy = &ctfv1alpha1.InstancePolicy{MaxEphemeralStorage: q("128Mi")}
			s.Values = harness.Values(`{"tmpSizeLimit": "256Mi"}`)
		}, want: violation, field: "above the ceiling 128Mi"},
		{name: "a template raising the disk ceiling", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Policy = &ctfv1alpha1.InstancePolicy{MaxEphemeralStorage: q("10Gi")}
			s.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{EphemeralStorage: q("2Gi")}}
		}, want: violation, field: "above the ceiling 1Gi"},
		{name: "egress to the service range", tmpl: egressTo("10.96.0.1/32"), want: violation, field: "network-egress"},
		{name: "egress to the metadata address", tmpl: egressTo("169.254.169.254/32"), want: violation, field: "network-egress"},
		{name: "egress to everywhere", tmpl: egressTo("0.0.0.0/0"), want: violation, field: "network-egress"},
		// The suite's --internal-cidrs name only the pod and service ranges and the
		// metadata address: the private, link-local, loopback and IPv6 ranges still apply.
		{name: "egress to a private range the operator did not list", tmpl: egressTo("192.168.1.0/24"), want: violation, field: "ipBlock 192.168.1.0/24 reaches 192.168.1.0/24"},
		{name: "egress to Azure's host endpoint", tmpl: egressTo("168.63.129.16/32"), want: violation, field: "reaches 168.63.129.16/32"},
		{name: "egress to loopback", tmpl: egressTo("127.0.0.1/32"), want: violation, field: "reaches 127.0.0.1/32"},
		{name: "egress to IPv6 unique-local", tmpl: egressTo("fd12:3456::/32"), want: violation, field: "reaches fd12:3456::/32"},
		{name: "egress to IPv6 link-local", tmpl: egressTo("fe80::/10"), want: violation, field: "reaches fe80::/10"},
		{name: "egress to all of IPv6", tmpl: egressTo("::/0"), want: violation, field: "ipBlock ::/0 reaches"},
		{name: "an image at the metadata address", mutate: func(c *ctfv1alpha1.Challenge) { c.Spec.Image = "169.254.169.254/latest/meta-data:1" },
			want: violation, field: `image-registry: Deployment`},
		{name: "an image at the API server's address", mutate: func(c *ctfv1alpha1.Challenge) { c.Spec.Image = "10.96.0.1:443/api/v1:1" },
			want: violation, field: `registry "10.96.0.1:443" is an IP address`},
		{name: "an image from localhost", mutate: func(c *ctfv1alpha1.Challenge) { c.Spec.Image = "localhost:5000/x:1" },
			want: violation, field: "image-registry"},
		{name: "an image from a cluster-local name", mutate: func(c *ctfv1alpha1.Challenge) { c.Spec.Image = "registry.kube-system.svc.cluster.local/x:1" },
			want: violation, field: "image-registry"},
		{name: "an image outside the template's registries", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Policy = &ctfv1alpha1.InstancePolicy{AllowedRegistries: []ctfv1alpha1.RegistryPrefix{"ghcr.io/organisers"}}
		}, want: violation, field: "is not among the allowed [ghcr.io/organisers]"},
		{name: "a template allowing the metadata address as a registry", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Policy = &ctfv1alpha1.InstancePolicy{AllowedRegistries: []ctfv1alpha1.RegistryPrefix{"169.254.169.254"}}
			s.Image = "169.254.169.254/x:1"
		}, want: violation, field: "image-registry: ChallengeTemplate"},
		{name: "flag key from kube-system", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: "kube-system", Name: "any", Key: "token"}}
		}, want: violation, field: "flag-secret"},
		// What a template asks beyond the operator's flags (here the defaults: baseline at most,
		// no sandbox runtime class, no extra capability) ends in Error naming the flag.
		{name: "a privileged template above the operator's ceiling", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true), RuntimeClassName: "gvisor"}
		}, want: violation, field: "profile privileged is above --max-pod-security=baseline"},
		{name: "a capability beyond the baseline set", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, Capabilities: &ctfv1alpha1.Capabilities{Add: []ctfv1alpha1.Capability{"SYS_PTRACE"}}}
		}, want: violation, field: "capability SYS_PTRACE is not in the baseline standard's set"},
		{name: "a runtime class the operator did not list", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Security = &ctfv1alpha1.Security{RuntimeClassName: "runc"}
		}, want: violation, field: `runtime class "runc" is not in --sandbox-runtime-classes (none)`},
		{name: "a Localhost profile the operator did not list", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Security = &ctfv1alpha1.Security{SeccompProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementLocalhost, LocalhostProfile: "any.json"}}
		}, want: violation, field: "--allowed-localhost-profiles"},

		// Hostile-looking but harmless: rendered exactly as written.
		{name: "YAML in an env value", mutate: func(c *ctfv1alpha1.Challenge) {
			c.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "NOTE", Value: `a: b" --- {{ .Release.Name }} #'`}}
		}, want: safe, check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
			g.Expect(deployment(g, ch).Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "NOTE", Value: `a: b" --- {{ .Release.Name }} #'`}))
		}},
		{name: "YAML in an annotation value", mutate: withValues(`{"podAnnotations": {"note": "key: [value] & *alias"}}`), want: safe, check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
			g.Expect(deployment(g, ch).Spec.Template.Annotations).To(HaveKeyWithValue("note", "key: [value] & *alias"))
		}},
		{name: "an Ingress on the instance's own host", mutate: ingress, want: safe, check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
			url := "http://" + identity.Host(ch, harness.IngressDomain) + "/"
			g.Expect(ch.Status.Endpoint.URL).To(Equal(url))
			g.Expect(deployment(g, ch).Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "CHALLENGE_URL", Value: url}))
		}},
		{name: "internet egress allowed by the template", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Policy = &ctfv1alpha1.InstancePolicy{InternetEgress: true}
		}, want: safe, check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
			np := &networkingv1.NetworkPolicy{}
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ch), np)).To(Succeed())
			g.Expect(np.Spec.Egress).To(ContainElement(HaveField("To", ContainElement(HaveField("IPBlock.Except", ContainElement("169.254.169.254/32"))))))
			// IPv6 internet too, without the IPv6 internal ranges; the defaults are
			// excepted beside the operator's own ranges.
			g.Expect(np.Spec.Egress).To(ContainElement(HaveField("To", ContainElement(HaveField("IPBlock", And(
				HaveField("CIDR", "::/0"), HaveField("Except", ContainElements("fc00::/7", "fe80::/10", "::1/128"))))))))
			g.Expect(np.Spec.Egress).To(ContainElement(HaveField("To", ContainElement(HaveField("IPBlock.Except",
				ContainElements("10.244.0.0/16", "192.168.0.0/16", "168.63.129.16/32", "127.0.0.0/8"))))))
		}},
		{name: "an image from the template's own registry", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Policy = &ctfv1alpha1.InstancePolicy{AllowedRegistries: []ctfv1alpha1.RegistryPrefix{"registry.example/ctf"}}
		}, want: safe, check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
			g.Expect(deployment(g, ch).Spec.Template.Spec.Containers[0].Image).To(HavePrefix("registry.example/ctf/"))
		}},
		{name: "three replicas allowed by the template", tmpl: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Policy = &ctfv1alpha1.InstancePolicy{MaxReplicas: ptr.To(int32(3))}
			s.Values = harness.Values(`{"replicas": 3}`)
		}, want: safe, check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
			g.Expect(*deployment(g, ch).Spec.Replicas).To(Equal(int32(3)))
		}},
	}
	for _, name := range sortedKeys(lineBreaks) {
		c := lineBreaks[name]
		cases = append(cases,
			hostileChallenge{name: "env value with " + name, mutate: func(ch *ctfv1alpha1.Challenge) {
				ch.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "A", Value: "x" + c + "hostNetwork: true"}}
			}, want: refused, field: "spec.env[0].value"},
			hostileChallenge{name: "annotation value with " + name, raw: setValue("podAnnotations", map[string]any{"ctf.example/a": "x" + c + "y"}), want: refused, field: "spec.values.podAnnotations.ctf.example/a"},
			hostileChallenge{name: "Service annotation value with " + name, raw: setValue("expose", map[string]any{"annotations": map[string]any{"a": c}}), want: refused, field: "spec.values.expose.annotations.a"},
		)
	}
	return cases
}

// hostileTemplates are organiser mistakes and injections the API server refuses.
func hostileTemplates() []struct {
	name   string
	mutate func(*ctfv1alpha1.ChallengeTemplate)
	field  string
} {
	flagAt := func(path string) func(*ctfv1alpha1.ChallengeTemplate) {
		return func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Static: organiserSecret(), FlagDelivery: ctfv1alpha1.FlagDelivery{Path: path}}
		}
	}
	lifetime := func(def, maxLifetime string) func(*ctfv1alpha1.ChallengeTemplate) {
		return func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Lifetime = &ctfv1alpha1.LifetimePolicy{}
			if def != "" {
				t.Spec.Lifetime.Default = duration(def)
			}
			if maxLifetime != "" {
				t.Spec.Lifetime.Max = duration(maxLifetime)
			}
		}
	}
	return []struct {
		name   string
		mutate func(*ctfv1alpha1.ChallengeTemplate)
		field  string
	}{
		{"flag path injection", flagAt("/flag\n      hostPath: /"), "spec.flag.path"},
		{"security settings overridable by a Challenge", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.OverridableValues = []ctfv1alpha1.ValuePath{"env", "security.pod"}
		}, "overridableValues may not name security settings"},
		{"a command overridable by a Challenge", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.OverridableValues = []ctfv1alpha1.ValuePath{"command"}
		}, "overridableValues may not name security settings"},
		{"root in restricted", secured(&ctfv1alpha1.Security{RunAsUser: ptr.To[int64](0)}), "need profile baseline or privileged"},
		{"SYS_ADMIN in restricted", secured(&ctfv1alpha1.Security{Capabilities: &ctfv1alpha1.Capabilities{Add: []ctfv1alpha1.Capability{"SYS_ADMIN"}}}),
			"profile restricted may add NET_BIND_SERVICE only"},
		{"setuid helpers in restricted", secured(&ctfv1alpha1.Security{AllowPrivilegeEscalation: ptr.To(true)}), "allowPrivilegeEscalation needs profile baseline"},
		{"privileged in baseline", secured(&ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, Privileged: ptr.To(true)}), "privileged needs profile privileged"},
		{"unconfined in baseline", secured(&ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline,
			AppArmorProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementUnconfined}}), "Unconfined seccomp or AppArmor profile needs profile privileged"},
		{"a Localhost profile without its name", secured(&ctfv1alpha1.Security{SeccompProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementLocalhost}}),
			"localhostProfile is required with type Localhost"},
		{"a profile of the operator's own", secured(&ctfv1alpha1.Security{Profile: "root"}), "spec.security.profile"},
		{"escalation forced off beside SYS_ADMIN", secured(&ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &ctfv1alpha1.Capabilities{Add: []ctfv1alpha1.Capability{"SYS_ADMIN"}}}), "allowPrivilegeEscalation cannot be false with privileged or SYS_ADMIN"},
		{"a command with a line break", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Command = []ctfv1alpha1.Argument{"/bin/sh", "-c", "id\nwhoami"}
		}, "spec.command[2]"},
		{"a relative working directory", func(t *ctfv1alpha1.ChallengeTemplate) { t.Spec.WorkingDir = "app" }, "spec.workingDir"},
		{"a probe of a port the template does not have", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Probes = &ctfv1alpha1.Probes{Liveness: &ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "ssh"}}}
		}, "a probe's port must name one of spec.ports"},
		{"a probe of two kinds", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Probes = &ctfv1alpha1.Probes{Readiness: &ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "nc"},
				Exec: &ctfv1alpha1.ExecProbe{Command: []ctfv1alpha1.Argument{"true"}}}}
		}, "exactly one of http, tcp and exec"},
		{"a probe path with a line break", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Probes = &ctfv1alpha1.Probes{Readiness: &ctfv1alpha1.Probe{HTTP: &ctfv1alpha1.HTTPProbe{Path: "/\nHost: x", Port: "nc"}}}
		}, "spec.probes.readiness.http.path"},
		{"a file with a NUL byte", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Files = []ctfv1alpha1.File{{Path: "/etc/app.conf", Content: "a\x00b"}}
		}, "spec.files[0].content"},
		{"a file climbing out", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Files = []ctfv1alpha1.File{{Path: "/etc/../../proc/self", Content: "x"}}
		}, "spec.files[0].path"},
		{"two files at one path", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Files = []ctfv1alpha1.File{{Path: "/etc/a", Content: "1"}, {Path: "/etc/a", Content: "2"}}
		}, "file paths must be unique"},
		{"a scratch directory over /tmp", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Scratch = []ctfv1alpha1.ScratchMount{{Path: "/tmp"}}
		}, "must not be /tmp"},
		{"a scratch directory climbing out", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Scratch = []ctfv1alpha1.ScratchMount{{Path: "/var/../etc"}}
		}, "must not be /tmp or contain . or .. segments"},
		{"flag path with LS", flagAt("/flag\u2028x"), "spec.flag.path"},
		{"relative flag path", flagAt("flag.txt"), "spec.flag.path"},
		{"flag path climbing", flagAt("/flag/../etc/passwd"), "spec.flag.path"},
		{"flag path over /tmp", flagAt("/tmp"), "spec.flag.path"},
		{"egress name injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Egress = []ctfv1alpha1.EgressRule{{Name: "api\n    - to: [{ipBlock: {cidr: 0.0.0.0/0}}]", CIDR: "198.51.100.0/24"}}
		}, "spec.egress[0].name"},
		{"egress CIDR injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Egress = []ctfv1alpha1.EgressRule{{Name: "api", CIDR: "198.51.100.0/24\n"}}
		}, "spec.egress[0].cidr"},
		{"egress CIDR that is not one", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Egress = []ctfv1alpha1.EgressRule{{Name: "api", CIDR: "checker.internal"}}
		}, "spec.egress[0].cidr"},
		{"duplicate egress names", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Egress = []ctfv1alpha1.EgressRule{{Name: "api", CIDR: "198.51.100.0/24"}, {Name: "api", CIDR: "203.0.113.0/24"}}
		}, "spec.egress names must be unique"},
		{"ingress class injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, IngressClassName: "nginx\nx: y"}
		}, "spec.expose.ingressClassName"},
		{"lifetime overflowing", lifetime("", "1h"), "spec.lifetime.max"}, // made 3000000h as JSON below
		{"default above max", lifetime("2h", "1h"), "lifetime.default must not exceed lifetime.max"},
		{"default of zero", lifetime("0s", ""), "spec.lifetime.default"},
		{"duplicate ports", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Ports = append(t.Spec.Ports, ctfv1alpha1.ChallengePort{Name: "nc2", Port: 1337})
		}, "spec.ports must not repeat a port and protocol"},
		{"duplicate port names", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Ports = append(t.Spec.Ports, ctfv1alpha1.ChallengePort{Name: "nc", Port: 1338})
		}, "spec.ports names must be unique"},
		{"empty Secret key", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "k"}}
		}, "spec.flag.static.key"},
		{"Secret name injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "k\n", Key: "k"}}
		}, "spec.flag.static.name"},
		{"flag format with two digests", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: *organiserSecret(), Format: "CTF{%s%s}"}}
		}, "spec.flag.dynamic.format"},
		{"flag format with another verb", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: *organiserSecret(), Format: "CTF{%s}%d"}}
		}, "spec.flag.dynamic.format"},
		{"flag format with a line break", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: *organiserSecret(), Format: "CTF{%s}\n"}}
		}, "spec.flag.dynamic.format"},
		{"overridable path injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.OverridableValues = []ctfv1alpha1.ValuePath{"env\n"}
		}, "spec.overridableValues[0]"},
		{"name too long for a label", func(t *ctfv1alpha1.ChallengeTemplate) { t.Name = strings.Repeat("t", 64) }, "metadata.name must be a DNS label"},
		{"name starting with a digit (its instances could never start)", func(t *ctfv1alpha1.ChallengeTemplate) { t.Name = "1st-web" }, "metadata.name must be a DNS label that starts with a letter"},
		{"template values injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Values = &ctfv1alpha1.Values{TmpSizeLimit: q("1Gi\n")}
		}, "spec.values.tmpSizeLimit"},
		{"template env value with NEL", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "A", Value: "x\u0085y"}}
		}, "spec.env[0].value"},
		{"startable without a lifetime", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Instancer = &ctfv1alpha1.InstancerAccess{Startable: true}
		}, "spec.lifetime.default or spec.lifetime.max is required when spec.instancer.startable is true"},
		{"startable with only a renewal cap", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Instancer = &ctfv1alpha1.InstancerAccess{Startable: true}
			t.Spec.Lifetime = &ctfv1alpha1.LifetimePolicy{MaxRenewals: ptr.To(int32(3))}
		}, "spec.lifetime.default or spec.lifetime.max is required when spec.instancer.startable is true"},
		{"component named as the primary", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "primary", Image: "docker.io/library/redis:7"}}
		}, "primary names the instance's primary component"},
		{"component name too long for its objects' names", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "redis-cache", Image: "docker.io/library/redis:7"}}
		}, "spec.components[0].name"},
		{"two components of one name", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "a.example/db:1"}, {Name: "db", Image: "b.example/db:1"}}
		}, "spec.components[1]"},
		{"eight components", func(t *ctfv1alpha1.ChallengeTemplate) {
			for i := range 8 {
				t.Spec.Components = append(t.Spec.Components, ctfv1alpha1.Component{Name: fmt.Sprintf("c%d", i), Image: "a.example/c:1"})
			}
		}, "spec.components"},
		{"component image injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "postgres" + injection}}
		}, "spec.components[0].image"},
		{"component env injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "a.example/db:1", Env: []ctfv1alpha1.EnvVar{{Name: "A", Value: injection}}}}
		}, "spec.components[0].env[0].value"},
		{"component probe on a port it does not have", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "a.example/db:1",
				Container: ctfv1alpha1.Container{Probes: &ctfv1alpha1.Probes{Readiness: &ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "pg"}}}}}}
		}, "a probe's port must name one of the component's ports"},
		{"component root in restricted", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "a.example/db:1", Security: &ctfv1alpha1.Security{RunAsUser: ptr.To[int64](0)}}}
		}, "runAsUser and runAsGroup 0 (root) need profile baseline or privileged"},
		{"template scratch of 999999999999999E", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Values = &ctfv1alpha1.Values{TmpSizeLimit: q("999999999999999E")}
		}, "spec.values.tmpSizeLimit"},
		{"renewal cap beyond reason", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Lifetime = &ctfv1alpha1.LifetimePolicy{MaxRenewals: ptr.To(int32(1001))}
		}, "spec.lifetime.maxRenewals"},
		{"allowed registry injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Policy = &ctfv1alpha1.InstancePolicy{AllowedRegistries: []ctfv1alpha1.RegistryPrefix{"ghcr.io/org\n- 169.254.169.254"}}
		}, "spec.policy.allowedRegistries[0]"},
		{"allowed registry with a scheme", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Policy = &ctfv1alpha1.InstancePolicy{AllowedRegistries: []ctfv1alpha1.RegistryPrefix{"https://ghcr.io"}}
		}, "spec.policy.allowedRegistries[0]"},
		{"policy ceiling that does not parse", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Policy = &ctfv1alpha1.InstancePolicy{MaxMemory: q("1e99999999999")}
		}, "spec.policy.maxMemory"},
		{"a sidecar named as the primary's container", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Sidecars = []ctfv1alpha1.Sidecar{{Name: "challenge", Image: "a.example/proxy:1"}}
		}, "challenge names the primary workload's container"},
		{"two sidecars of one name", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Sidecars = []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "a.example/proxy:1"}, {Name: "proxy", Image: "a.example/proxy:2"}}
		}, "sidecar names must be unique"},
		{"four sidecars", func(t *ctfv1alpha1.ChallengeTemplate) {
			for i := range 4 {
				t.Spec.Sidecars = append(t.Spec.Sidecars, ctfv1alpha1.Sidecar{Name: fmt.Sprintf("s%d", i), Image: "a.example/s:1"})
			}
		}, "spec.sidecars"},
		{"a sidecar on the primary's port", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Sidecars = []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "a.example/proxy:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "web", Port: 1337, Protocol: ctfv1alpha1.ProtocolTCP}}}}
		}, "a sidecar's ports must differ in name and number from spec.ports"},
		{"a sidecar image injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Sidecars = []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "nginx" + injection}}
		}, "spec.sidecars[0].image"},
		{"a component's sidecar named as the component", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "a.example/db:1", Sidecars: []ctfv1alpha1.Sidecar{{Name: "db", Image: "a.example/x:1"}}}}
		}, "a sidecar must not be named as its component's container"},
		{"a component's sidecar on the component's port", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "a.example/db:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "pg", Port: 5432}},
				Sidecars: []ctfv1alpha1.Sidecar{{Name: "exporter", Image: "a.example/x:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "pg", Port: 9187}}}}}}
		}, "a sidecar's ports must differ in name and number from its component's"},
		{"a bare name taken by a component", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.BareNames = &ctfv1alpha1.BareNames{Primary: "db"}
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "a.example/db:1"}}
		}, "bareNames.primary must differ from every component's name"},
		{"a bare name that is no DNS label", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.BareNames = &ctfv1alpha1.BareNames{Primary: "web.evil.example"}
		}, "spec.bareNames.primary"},
		{"a component's flag without the template's", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "flag", Image: "a.example/flag:1", Flag: &ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile}}}
		}, "a component's or sidecar's flag delivers the template's flag"},
		{"a component's flag in a variable with no name", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Static: organiserSecret()}
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "flag", Image: "a.example/flag:1", Flag: &ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv}}}
		}, "flag.envName is required when flag.mount is Env"},
		{"a component's flag path climbing", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Static: organiserSecret()}
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "flag", Image: "a.example/flag:1", Flag: &ctfv1alpha1.FlagDelivery{Path: "/flag/../etc/shadow"}}}
		}, "spec.components[0].flag.path"},
		{"a component's secretEnv named twice", func(t *ctfv1alpha1.ChallengeTemplate) {
			ref := ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "db", Key: "password"}
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "a.example/db:1", SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "PW", Secret: ref}, {Name: "PW", Secret: ref}}}}
		}, "secretEnv names must be unique"},
		{"a secret file in /tmp", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.SecretFiles = []ctfv1alpha1.SecretFile{{Path: "/tmp/key.pem", Secret: ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "tls", Key: "key"}}}
		}, "a secret file must not be in /tmp"},
		{"a secret file climbing out", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.SecretFiles = []ctfv1alpha1.SecretFile{{Path: "/etc/../../proc/self/environ", Secret: ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "tls", Key: "key"}}}
		}, "spec.secretFiles[0].path"},
		{"a secret file's key injection", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.SecretFiles = []ctfv1alpha1.SecretFile{{Path: "/etc/key.pem", Secret: ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "tls", Key: "key\n"}}}
		}, "spec.secretFiles[0].secret.key"},
		{"memory /tmp over the image's own", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.MemoryTmp, t.Spec.KeepImageTmp = true, true
		}, "memoryTmp needs the operator's /tmp"},
		{"exposePorts of the first port, which expose exposes", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.ExposePorts = []ctfv1alpha1.PortExposure{{Port: "nc", Type: ctfv1alpha1.ExposeTLSRoute}}
		}, "exposePorts names spec.ports' TCP ports but the first"},
		{"exposePorts of a port the template does not have", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.ExposePorts = []ctfv1alpha1.PortExposure{{Port: "ssh", Type: ctfv1alpha1.ExposeTLSRoute}}
		}, "exposePorts names spec.ports' TCP ports but the first"},
		{"exposePorts of a UDP port", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Ports = append(t.Spec.Ports, ctfv1alpha1.ChallengePort{Name: "dns", Port: 53, Protocol: ctfv1alpha1.ProtocolUDP})
			t.Spec.ExposePorts = []ctfv1alpha1.PortExposure{{Port: "dns", Type: ctfv1alpha1.ExposeTLSRoute}}
		}, "exposePorts names spec.ports' TCP ports but the first"},
		{"a port exposed twice", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Ports = append(t.Spec.Ports, ctfv1alpha1.ChallengePort{Name: "web", Port: 80, Protocol: ctfv1alpha1.ProtocolTCP})
			t.Spec.ExposePorts = []ctfv1alpha1.PortExposure{{Port: "web", Type: ctfv1alpha1.ExposeHTTPRoute}, {Port: "web", Type: ctfv1alpha1.ExposeIngress}}
		}, "a port is exposed once"},
		{"a port exposed by a node port", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Ports = append(t.Spec.Ports, ctfv1alpha1.ChallengePort{Name: "web", Port: 80, Protocol: ctfv1alpha1.ProtocolTCP})
			t.Spec.ExposePorts = []ctfv1alpha1.PortExposure{{Port: "web", Type: ctfv1alpha1.ExposeNodePort}}
		}, "spec.exposePorts[0].type"},
		{"a port's Ingress on a Gateway", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Ports = append(t.Spec.Ports, ctfv1alpha1.ChallengePort{Name: "web", Port: 80, Protocol: ctfv1alpha1.ProtocolTCP})
			t.Spec.ExposePorts = []ctfv1alpha1.PortExposure{{Port: "web", Type: ctfv1alpha1.ExposeIngress, Gateway: &ctfv1alpha1.GatewayRef{Namespace: "kube-system", Name: "internal"}}}
		}, "gateway is for an HTTPRoute or a TLSRoute"},
		{"a port's route of an ingress class", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Ports = append(t.Spec.Ports, ctfv1alpha1.ChallengePort{Name: "web", Port: 80, Protocol: ctfv1alpha1.ProtocolTCP})
			t.Spec.ExposePorts = []ctfv1alpha1.PortExposure{{Port: "web", Type: ctfv1alpha1.ExposeHTTPRoute, IngressClassName: "internal"}}
		}, "ingressClassName is for an Ingress"},
		{"a component's exposePorts of its first port", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "shell", Image: "a.example/shell:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "ssh", Port: 22}},
				ExposePorts: []ctfv1alpha1.PortExposure{{Port: "ssh", Type: ctfv1alpha1.ExposeTLSRoute}}}}
		}, "exposePorts names the component's TCP ports but its first"},
		{"two sidecars on one port", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Sidecars = []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "a.example/proxy:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "web", Port: 80}}},
				{Name: "admin", Image: "a.example/admin:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "admin", Port: 80}}}}
		}, "two sidecars of a pod must not share a port name or number"},
		{"a component's two sidecars of one port name", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "db", Image: "a.example/db:1", Sidecars: []ctfv1alpha1.Sidecar{
				{Name: "a", Image: "a.example/a:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "metrics", Port: 9100}}},
				{Name: "b", Image: "a.example/b:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "metrics", Port: 9101}}}}}}
		}, "two sidecars of a pod must not share a port name or number"},
		{"a sidecar repeating a port", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Sidecars = []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "a.example/proxy:1",
				Ports: []ctfv1alpha1.ChallengePort{{Name: "web", Port: 80}, {Name: "web2", Port: 80}}}}
		}, "a sidecar must not repeat a port and protocol"},
		{"a component of eleven replicas", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Components = []ctfv1alpha1.Component{{Name: "worker", Image: "a.example/w:1", Replicas: ptr.To[int32](11)}}
		}, "spec.components[0].replicas"},
		// Issue 32's named flags: nothing a format, a name or a target says
		// reaches the flag key, another team's flag or another container.
		{"a per-team format reading another argument (the key's place)", named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}%[1]x"}}), "perTeam.format must contain %s exactly once"},
		{"a per-team format of two bodies", named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s%s}"}}), "perTeam.format must contain %s exactly once"},
		{"a per-team format printing a value verbatim", named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%v}"}}), "perTeam.format must contain %s exactly once"},
		{"a per-team format with a line break", named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}\nX"}}), "perTeam.format must contain %s exactly once"},
		{"a flag both static and per team", named(ctfv1alpha1.NamedFlag{Name: "main", Static: organiserSecret(), PerTeam: &ctfv1alpha1.PerTeamFlag{}}), "set exactly one of static and perTeam"},
		{"a flag named as a Secret key path", named(ctfv1alpha1.NamedFlag{Name: "../env.API", PerTeam: &ctfv1alpha1.PerTeamFlag{}}), "spec.flags[0].name"},
		{"a named flag's path injection", named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{}, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag\n      hostPath: /"}}), "spec.flags[0].path"},
		{"flag and flags at once", func(t *ctfv1alpha1.ChallengeTemplate) {
			named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{}})(t)
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Static: organiserSecret()}
		}, "set spec.flag or spec.flags, not both"},
		{"a flag for a component that is not there", named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{}, Component: "db"}), "a flag's component must be one of spec.components"},
		{"a flag for a sidecar that is not there", named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{}, Sidecar: "proxy"}), "a flag's sidecar must be one of its workload's sidecars"},
		{"two flags at one path", named(
			ctfv1alpha1.NamedFlag{Name: "a", PerTeam: &ctfv1alpha1.PerTeamFlag{}},
			ctfv1alpha1.NamedFlag{Name: "b", Static: organiserSecret()}), "two flags are delivered to the same path or variable"},
		{"two flags in one variable", named(
			ctfv1alpha1.NamedFlag{Name: "a", PerTeam: &ctfv1alpha1.PerTeamFlag{}, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"}},
			ctfv1alpha1.NamedFlag{Name: "b", Static: organiserSecret(), FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"}}), "two flags are delivered to the same path or variable"},
		{"a per-team flag in a variable of a pooled instance", func(t *ctfv1alpha1.ChallengeTemplate) {
			named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{}, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"}})(t)
			t.Spec.Pool = &ctfv1alpha1.PoolSpec{Max: 2}
		}, "a pooled template's perTeam flag is a file"},
		{"a pooled per-team flag at the root", func(t *ctfv1alpha1.ChallengeTemplate) {
			named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{}, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag.txt"}})(t)
			t.Spec.Pool = &ctfv1alpha1.PoolSpec{Max: 2}
		}, "a pooled template's perTeam flag has a directory of its own"},
		{"a pooled per-team flag sharing its directory", func(t *ctfv1alpha1.ChallengeTemplate) {
			named(ctfv1alpha1.NamedFlag{Name: "a", PerTeam: &ctfv1alpha1.PerTeamFlag{}, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag/a.txt"}},
				ctfv1alpha1.NamedFlag{Name: "b", Static: organiserSecret(), FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag/b.txt"}})(t)
			t.Spec.Pool = &ctfv1alpha1.PoolSpec{Max: 2}
		}, "a pooled template's perTeam flag has a directory of its own"},
		{"submissions without flags to verify", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Submissions = &ctfv1alpha1.Submissions{DestroyOnSolve: true}
		}, "spec.submissions needs spec.flags"},
		{"a shared template with a pool", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Sharing = ctfv1alpha1.SharingShared
			t.Spec.Pool = &ctfv1alpha1.PoolSpec{Max: 2}
		}, "a shared template has one instance, the organiser's: no pool"},
		{"a shared template with a team's own flag (one team's flag shown to every team)", func(t *ctfv1alpha1.ChallengeTemplate) {
			named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{}})(t)
			t.Spec.Sharing = ctfv1alpha1.SharingShared
		}, "a shared instance serves every team: its flags are static"},
		{"a shared template with a dynamic flag", func(t *ctfv1alpha1.ChallengeTemplate) {
			t.Spec.Flag = &ctfv1alpha1.FlagSpec{Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: *organiserSecret()}}
			t.Spec.Sharing = ctfv1alpha1.SharingShared
		}, "a shared instance serves every team: its flags are static"},
		{"a shared template one team's solve would stop", func(t *ctfv1alpha1.ChallengeTemplate) {
			named(ctfv1alpha1.NamedFlag{Name: "main", Static: organiserSecret()})(t)
			t.Spec.Sharing = ctfv1alpha1.SharingShared
			t.Spec.Submissions = &ctfv1alpha1.Submissions{DestroyOnSolve: true}
		}, "one team's solve cannot stop it"},
		{"an unknown sharing", func(t *ctfv1alpha1.ChallengeTemplate) { t.Spec.Sharing = "Everyone" }, "spec.sharing"},
		{"an unknown answer to a shared flag", func(t *ctfv1alpha1.ChallengeTemplate) {
			named(ctfv1alpha1.NamedFlag{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{}})(t)
			t.Spec.Submissions = &ctfv1alpha1.Submissions{SharedFlag: "Correct"}
		}, "spec.submissions.sharedFlag"},
	}
}

// named gives a template the named flags fs.
func named(fs ...ctfv1alpha1.NamedFlag) func(*ctfv1alpha1.ChallengeTemplate) {
	return func(t *ctfv1alpha1.ChallengeTemplate) { t.Spec.Flags = fs }
}

var hostileCount atomic.Int32

func TestHostileChallenges(t *testing.T) {
	for _, tc := range hostileChallenges() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runHostile(t, tc)
		})
	}
}

func TestHostileTemplates(t *testing.T) {
	for _, tc := range hostileTemplates() {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := builders.Template(fmt.Sprintf("hostile-%d", hostileCount.Add(1)), func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Image = "registry.example/ctf/hostile:1"
				s.Ports = []ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1337, Protocol: ctfv1alpha1.ProtocolTCP}}
			})
			tc.mutate(tmpl)
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tmpl)
			g.Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{Object: m}
			u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("ChallengeTemplate"))
			if tc.name == "lifetime overflowing" {
				g.Expect(unstructured.SetNestedField(u.Object, "3000000h", "spec", "lifetime", "max")).To(Succeed())
			}
			err = k8s.Create(context.Background(), u, client.FieldValidation("Strict"))
			if err == nil {
				_ = k8s.Delete(context.Background(), u)
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.field))
		})
	}
}

func runHostile(t *testing.T, tc hostileChallenge) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	n := hostileCount.Add(1)
	ch := builders.Challenge(ns, fmt.Sprintf("h%d", n), fmt.Sprintf("p%d", n))
	if tc.tmpl != nil {
		tmpl := h.Template(t, fmt.Sprintf("hostile-%d", n), tc.tmpl)
		ch = builders.FromTemplate(ns, ch.Name, ch.Spec.Participant, tmpl.Name)
	}
	if tc.mutate != nil {
		tc.mutate(ch)
	}
	err := createStrict(ctx, ch, tc.raw)
	if tc.want == refused {
		g.Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring(tc.field))
		expectNothingOutside(g, ctx)
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	switch tc.want {
	case violation:
		got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
		g.Expect(got.Status.Reason).To(Equal("PolicyViolation"), got.Status.Message)
		g.Expect(got.Status.Message).To(ContainSubstring(tc.field))
		g.Expect(instanceObjects(g, ctx, ch)).To(BeEmpty(), "a refused release applies nothing")
	case safe:
		got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
		tc.check(g, got)
		for _, obj := range instanceObjects(g, ctx, ch) {
			g.Expect(obj.GetNamespace()).To(Equal(ns), "%T %s", obj, obj.GetName())
		}
	}
	expectNothingOutside(g, ctx)
	g.Expect(k8s.Delete(ctx, ch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(ch), &ctfv1alpha1.Challenge{}))).To(BeTrue())
		g.Expect(instanceObjects(g, ctx, ch)).To(BeEmpty())
		g.Expect(releaseSecrets(ctx, g, ns, ch.Name)).To(BeEmpty())
	}, harness.Timeout, harness.Interval).Should(Succeed(), "nothing is left after deletion")
}

// createStrict creates ch as JSON after raw has edited its spec, with strict
// field validation, as kubectl does: unknown fields are refused, not dropped.
func createStrict(ctx context.Context, ch *ctfv1alpha1.Challenge, raw func(map[string]any)) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ch)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	if raw != nil {
		spec, _ := u.Object["spec"].(map[string]any)
		raw(spec)
	}
	return k8s.Create(ctx, u, client.FieldValidation("Strict"))
}

// instanceObjects lists every object of the instance, in any namespace.
func instanceObjects(g Gomega, ctx context.Context, ch *ctfv1alpha1.Challenge) []client.Object {
	sel := client.MatchingLabels{ctfv1alpha1.InstanceLabel: ch.Name, ctfv1alpha1.InstanceNamespaceLabel: ch.Namespace}
	var out []client.Object
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ServiceList{}, &corev1.ServiceAccountList{},
		&networkingv1.NetworkPolicyList{}, &networkingv1.IngressList{}, &corev1.SecretList{}, &corev1.PodList{}} {
		g.Expect(k8s.List(ctx, list, sel)).To(Succeed())
		items, err := listItems(list)
		g.Expect(err).NotTo(HaveOccurred())
		out = append(out, items...)
	}
	return out
}

// expectNothingOutside asserts that no workload exists in the cluster's own
// namespaces: an injected object would land there.
func expectNothingOutside(g Gomega, ctx context.Context) {
	for _, ns := range []string{"kube-system", "default", "kube-public", harness.OrganiserNamespace} {
		for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.DaemonSetList{}, &corev1.PodList{}} {
			g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			items, err := listItems(list)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(items).To(BeEmpty(), "workloads in %s", ns)
		}
	}
}

// listItems returns a list's items as objects.
func listItems(list client.ObjectList) ([]client.Object, error) {
	objs, err := apimeta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(client.Object))
	}
	return out, nil
}

func limitsSet(g Gomega, ch *ctfv1alpha1.Challenge) {
	limits := deployment(g, ch).Spec.Template.Spec.Containers[0].Resources.Limits
	g.Expect(limits.Cpu().IsZero()).To(BeFalse(), "a cpu limit is always set")
	g.Expect(limits.Memory().IsZero()).To(BeFalse(), "a memory limit is always set")
	g.Expect(limits.StorageEphemeral().IsZero()).To(BeFalse(), "an ephemeral-storage limit is always set")
}

func deployment(g Gomega, ch *ctfv1alpha1.Challenge) *appsv1.Deployment {
	dep := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ch), dep)).To(Succeed())
	return dep
}

func setValue(key string, v any) func(map[string]any) {
	return func(spec map[string]any) {
		vals, _ := spec["values"].(map[string]any)
		if vals == nil {
			vals = map[string]any{}
		}
		vals[key] = v
		spec["values"] = vals
	}
}

// ingress exposes c through an Ingress, on the host the operator gives it.
// secured gives a template a security section.
func secured(sec *ctfv1alpha1.Security) func(*ctfv1alpha1.ChallengeTemplate) {
	return func(t *ctfv1alpha1.ChallengeTemplate) { t.Spec.Security = sec }
}

func ingress(c *ctfv1alpha1.Challenge) {
	c.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress}
}

func egressTo(cidr string) func(*ctfv1alpha1.ChallengeTemplateSpec) {
	return func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Egress = []ctfv1alpha1.EgressRule{{Name: "dest", CIDR: cidr}}
	}
}

func manyKeys(n int) map[string]any {
	out := map[string]any{}
	for i := range n {
		out[fmt.Sprintf("ctf.example/k%d", i)] = "v"
	}
	return out
}

func organiserSecret() *ctfv1alpha1.SecretKeyRef {
	return &ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "flag-key", Key: "key"}
}

func q(s string) *ctfv1alpha1.Quantity {
	v := ctfv1alpha1.Quantity(s)
	return &v
}

func duration(s string) *metav1.Duration {
	d := &metav1.Duration{}
	if err := d.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
		panic(err)
	}
	return d
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestHTTPSIngressInstances: an Ingress with a tls section serves the
// instance's own host over HTTPS, with the controller's default certificate
// or the organiser's wildcard Secret the operator allows; its status URL and
// its container's CHALLENGE_URL are https; a certificate Secret the operator
// did not list is refused.
func TestHTTPSIngressInstances(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, secret string
		refused      bool
	}{
		{"the controller's default certificate", "", false},
		{"the organiser's wildcard certificate", wildcardTLS, false},
		{"a certificate nobody allowed", "bank-tls", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := namespace(t)
			ch := builders.Challenge(ns, "web", "team-tls")
			ch.Spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, TLS: &ctfv1alpha1.IngressTLS{SecretName: tc.secret}}
			g.Expect(k8s.Create(ctx, ch)).To(Succeed())
			if tc.refused {
				got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
				g.Expect(got.Status.Reason).To(Equal("PolicyViolation"))
				g.Expect(got.Status.Message).To(ContainSubstring(`ingress-tls: Ingress ` + ns + `/web: certificate Secret "bank-tls" is not allowed; allowed: wildcard-tls`))
				return
			}
			got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
			host := identity.Host(ch, harness.IngressDomain)
			url := "https://" + host + "/"
			g.Expect(got.Status.Endpoint.URL).To(Equal(url))
			ing := &networkingv1.Ingress{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), ing)).To(Succeed())
			g.Expect(ing.Spec.TLS).To(Equal([]networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: tc.secret}}))
			g.Expect(deployment(g, ch).Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "CHALLENGE_URL", Value: url}))
		})
	}
}

// TestTwoTeamsOfOneIngressTemplateGetTheirOwnHosts: two teams start the same
// Ingress-exposed template at the same moment (the instancer's burst at the
// opening). Each instance gets a host of its own under the domain, its
// Ingress serves only that host, its status gives that URL, and its container
// is handed that URL; once they shared the template's one host, and a team
// could be routed to another's instance.
func TestTwoTeamsOfOneIngressTemplateGetTheirOwnHosts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := namespace(t), namespace(t)
	h.Template(t, "tpl-web-ingress", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress}
	})
	// The same name in two namespaces: the one pair a name alone cannot tell apart.
	teams := []*ctfv1alpha1.Challenge{
		builders.FromTemplate(ns, "web", "team-h1", "tpl-web-ingress"),
		builders.FromTemplate(other, "web", "team-h2", "tpl-web-ingress"),
	}
	var wg sync.WaitGroup
	for _, ch := range teams {
		wg.Go(func() { g.Expect(k8s.Create(ctx, ch)).To(Succeed()) })
	}
	wg.Wait()

	hosts := map[string]bool{}
	for _, ch := range teams {
		got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
		host := identity.Host(ch, harness.IngressDomain)
		g.Expect(host).To(HaveSuffix("." + harness.IngressDomain))
		hosts[host] = true
		url := "http://" + host + "/"
		g.Expect(got.Status.Endpoint.URL).To(Equal(url))

		ing := &networkingv1.Ingress{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), ing)).To(Succeed())
		g.Expect(ing.Spec.Rules).To(HaveLen(1))
		g.Expect(ing.Spec.Rules[0].Host).To(Equal(host), "the Ingress serves the instance's own host only")
		g.Expect(deployment(g, ch).Spec.Template.Spec.Containers[0].Env).To(ContainElements(
			corev1.EnvVar{Name: "CHALLENGE_HOST", Value: host}, corev1.EnvVar{Name: "CHALLENGE_URL", Value: url}))
	}
	g.Expect(hosts).To(HaveLen(2), "two teams, two hosts")
}
