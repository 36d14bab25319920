package policy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

func TestValidReleasePasses(t *testing.T) {
	for _, tt := range harmlessChanges {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fx := newFixture(tt.own, tt.ingress)
			if tt.apply != nil {
				tt.apply(fx)
			}
			g.Expect(Check(fx.render(), fx.in)).To(Succeed())
		})
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tt := range breakings {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fx := newFixture(tt.own, tt.ingress)
			tt.apply(fx)
			err := Check(fx.render(), fx.in)
			var v *Violation
			g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
			g.Expect(v.Rule).To(Equal(tt.rule), v.Error())
		})
	}
}

// TestEveryRuleIsTested keeps the table honest: every rule the gate can name has a case.
func TestEveryRuleIsTested(t *testing.T) {
	g := NewWithT(t)
	tested := map[string]bool{}
	for _, tt := range breakings {
		tested[tt.rule] = true
	}
	rules := []string{
		ruleParse, ruleKind, ruleName, ruleDuplicate, ruleNamespace, ruleLabels, ruleMetadataKey,
		ruleHelmAnnotation, ruleFinalizers, ruleRequired, ruleHostNamespace, ruleHostPort, rulePodSecurity,
		ruleServiceAccount, ruleContainers, ruleVolume, ruleSecretRef, ruleResources, ruleReplicas,
		ruleSelector, ruleService, ruleIngress, ruleIngressHost, ruleIngressClass, ruleIngressTLS, ruleGatewayRoute, ruleSecContext, ruleProbeHost, ruleNetworkPolicy, ruleNetworkEgress,
		ruleNetworkIngress, ruleSecret, rulePlacement, ruleImageRegistry, ruleProfile, ruleRootGroup,
		ruleGrace, ruleSchedulingGate, ruleClusterIP, ruleSourceRanges, ruleQuota, ruleLimitRange, ruleNamespaceMeta,
		ruleUnjudged, ruleOwner, ruleBareNames,
	}
	for _, r := range rules {
		g.Expect(tested).To(HaveKey(r))
	}
	g.Expect(tested).To(HaveLen(len(rules)))
}

func TestViolationError(t *testing.T) {
	g := NewWithT(t)
	fx := newFixture(false, false)
	fx.deploy.Spec.Template.Spec.HostPID = true
	err := Check(fx.render(), fx.in)
	g.Expect(err).To(MatchError("PolicyViolation: host-namespace: Deployment ctf-team1/web-team1: the pod shares a namespace of the node"))

	fx = newFixture(true, false)
	fx.ns.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	err = Check(fx.render(), fx.in)
	g.Expect(err).To(MatchError(HavePrefix("PolicyViolation: namespace: Namespace ctf-team1: ")))

	err = Check([]byte("---\nkind: [\n"), fx.in)
	g.Expect(err).To(MatchError(HavePrefix("PolicyViolation: parse: document 1: ")))
}

// TestPassedReturnsWhatPassed: what passes the gate comes back as the
// objects the manifest held, in its order; nothing comes back from a
// manifest that breaks a rule, or from an empty one.
func TestPassedReturnsWhatPassed(t *testing.T) {
	g := NewWithT(t)
	fx := newFixture(false, true)

	objs, err := Passed(fx.render(), fx.in)
	g.Expect(err).NotTo(HaveOccurred())
	kinds := make([]string, len(objs))
	for i, o := range objs {
		kinds[i] = o.GetKind()
	}
	g.Expect(kinds).To(HaveExactElements("ServiceAccount", "Secret", "Service", "Deployment", "NetworkPolicy", "Ingress"))
	g.Expect(objs[2].GetName()).To(Equal(fx.svc.Name))
	g.Expect(objs[2].Object).To(HaveKeyWithValue("spec", HaveKey("ports")), "as the API server reads it")

	fx.svc.Spec.ExternalIPs = []string{"203.0.113.7"}
	objs, err = Passed(fx.render(), fx.in)
	g.Expect(objs).To(BeNil())
	var v *Violation
	g.Expect(errors.As(err, &v)).To(BeTrue())
	g.Expect(v.Rule).To(Equal("service"))

	_, err = Passed(nil, fx.in)
	g.Expect(errors.As(err, &v)).To(BeTrue())
	g.Expect(v.Rule).To(Equal("required"))
}

func TestInstanceTheGateCannotJudgeBy(t *testing.T) {
	manifest := newFixture(false, false).render()
	for name, broken := range map[string]func(*Instance){
		"no release":               func(in *Instance) { in.Release = "" },
		"no namespace":             func(in *Instance) { in.Namespace = "" },
		"no workload":              func(in *Instance) { in.Workloads = nil },
		"no selector":              func(in *Instance) { in.Workloads[0].Selector = nil },
		"a primary without labels": func(in *Instance) { in.Workloads[0].Labels = nil },
		"a primary with a name":    func(in *Instance) { in.Workloads[0].Name = "web" },
		"a component without a selector": func(in *Instance) {
			in.Workloads = append(in.Workloads, Workload{Name: "redis", Labels: testLabels()})
		},
		"a component without a name": func(in *Instance) {
			in.Workloads = append(in.Workloads, Workload{Labels: testLabels(), Selector: testSelector()})
		},
		"no identity labels":        func(in *Instance) { in.Labels = nil },
		"an invalid internal range": func(in *Instance) { in.Limits.InternalCIDRs = append(in.Limits.InternalCIDRs, netip.Prefix{}) },
		"an invalid allowed range":  func(in *Instance) { in.Limits.AllowedCIDRs = []netip.Prefix{{}} },
		"a namespace of its own without its quota": func(in *Instance) {
			in.OwnNamespace, in.Quota = true, nil
		},
		"a namespace of its own without its limit range": func(in *Instance) {
			in.OwnNamespace, in.LimitRange = true, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			in := testInstance()
			broken(&in)
			err := Check(manifest, in)
			var v *Violation
			g.Expect(err).To(HaveOccurred())
			g.Expect(errors.As(err, &v)).To(BeFalse(), "a misconfigured gate is not the release's fault")
		})
	}
}

func TestKeysRefused(t *testing.T) {
	keys := Keys{Allowed: []string{
		"service.beta.kubernetes.io/", "node.kubernetes.io/exact", "helm.sh/", "meta.helm.sh/release-name",
		"ctf.challenge-operator.io/", "app.kubernetes.io/version", "allowed.example.com/",
	}}
	tests := []struct {
		key     string
		refused bool
	}{
		{"app.kubernetes.io/part-of", true},
		{"app.kubernetes.io/version", false},
		{"kubernetes.io/metadata.name", true},
		{"node-role.kubernetes.io/control-plane", true},
		{"container.apparmor.security.beta.kubernetes.io/challenge", true},
		{"seccomp.security.alpha.kubernetes.io/pod", true},
		{"pod-security.kubernetes.io/enforce", true},
		{"service.beta.kubernetes.io/aws-load-balancer-internal", false},
		{"node.kubernetes.io/exact", false},
		{"node.kubernetes.io/exact-not", true},
		{"k8s.io/x", true},
		{"storage.k8s.io/x", true},
		{"k8s-app", true},
		{"helm.sh/resource-policy", true},
		{"helm.sh/hook", true},
		{"meta.helm.sh/release-name", true},
		{ctfv1alpha1.ParticipantLabel, true},
		{"x.ctf.challenge-operator.io/participant", true},
		{"HELM.SH/hook", true},
		{"Kubernetes.IO/x", true},
		{"evilkubernetes.io/x", true},
		{"kubernetes.io.example.com/x", true},
		{"example.com/owner", true},
		{"allowed.example.com/owner", false},
		{"tier", false},
		{"app", false},
		// Other controllers' keys: an address from a shared pool, an ingress controller's
		// configuration, a reissued shared certificate, a runtime's devices and flags.
		{"metallb.universe.tf/address-pool", true},
		{"metallb.io/loadBalancerIPs", true},
		{"io.cilium/lb-ipam-ips", true},
		{"lbipam.cilium.io/ips", true},
		{"kube-vip.io/loadbalancerIPs", true},
		{"nginx.org/server-snippets", true},
		{"nginx.ingress.kubernetes.io/configuration-snippet", true},
		{"haproxy.org/backend-config-snippet", true},
		{"konghq.com/plugins", true},
		{"cert-manager.io/cluster-issuer", true},
		{"io.kubernetes.cri-o.Devices", true}, // no prefix, yet a runtime's
		{"io.kubernetes.cri-o.userns-mode", true},
		{"io.katacontainers.config.hypervisor.kernel_params", true},
		{"dev.gvisor.flag.net-raw", true},
		{"dev.gvisor.spec.mount.shared.share", true},
		{"category", false},
		{"team_name", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			NewWithT(t).Expect(keys.Refused(tt.key)).To(Equal(tt.refused))
		})
	}
	t.Run("nothing allowed", func(t *testing.T) {
		NewWithT(t).Expect(Keys{}.Refused("service.beta.kubernetes.io/aws-load-balancer-internal")).To(BeTrue())
	})
}

func TestCoveredSplitsRanges(t *testing.T) {
	g := NewWithT(t)
	ten := prefixes("10.0.0.0/8")[0]
	g.Expect(covered(ten, prefixes("10.0.0.0/9", "10.128.0.0/9"))).To(BeTrue())
	g.Expect(covered(ten, prefixes("10.0.0.0/9", "10.128.0.0/10"))).To(BeFalse())
	g.Expect(covered(ten, prefixes("0.0.0.0/0"))).To(BeTrue())
	g.Expect(covered(ten, prefixes("::/0"))).To(BeFalse())
	g.Expect(covered(prefixes("fd00::/8")[0], prefixes("fd00::/9", "fd80::/9"))).To(BeTrue())
}

// TestChartShapedManifest checks text shaped as the chart renders it, comments, quoting, octal
// modes and all, rather than what the typed fixture marshals.
func TestChartShapedManifest(t *testing.T) {
	g := NewWithT(t)
	in := testInstance()
	g.Expect(Check([]byte(chartManifest), in)).To(Succeed())

	broken := strings.Replace(chartManifest, "hostNetwork: false", "hostNetwork: true", 1)
	var v *Violation
	g.Expect(errors.As(Check([]byte(broken), in), &v)).To(BeTrue())
	g.Expect(v.Rule).To(Equal("host-namespace"))

	// A YAML 1.1 boolean reads as true for the gate as it does for the API client.
	broken = strings.Replace(chartManifest, "hostNetwork: false", "hostNetwork: yes", 1)
	g.Expect(errors.As(Check([]byte(broken), in), &v)).To(BeTrue())
	g.Expect(v.Rule).To(Equal("host-namespace"))
}

const chartManifest = `---
# Source: challenge/templates/serviceaccount.yaml
# An identity of its own, with no API token: a challenge never talks to the API server.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: web-team1
  namespace: ctf-team1
  labels:
    app.kubernetes.io/name: challenge
    app.kubernetes.io/instance: web-team1
    app.kubernetes.io/managed-by: challenge-operator
    helm.sh/chart: challenge-0.1.0
    ctf.challenge-operator.io/instance: web-team1
    ctf.challenge-operator.io/instance-namespace: ctf-team1
    ctf.challenge-operator.io/participant: "team1"
    ctf.challenge-operator.io/challenge: "web"
automountServiceAccountToken: false
---
# Source: challenge/templates/flag-secret.yaml
# The instance's flag, the only place it is written.
apiVersion: v1
kind: Secret
metadata:
  name: web-team1-flag
  namespace: ctf-team1
  labels:
    app.kubernetes.io/name: challenge
    app.kubernetes.io/instance: web-team1
    app.kubernetes.io/managed-by: challenge-operator
    helm.sh/chart: challenge-0.1.0
    ctf.challenge-operator.io/instance: web-team1
    ctf.challenge-operator.io/instance-namespace: ctf-team1
    ctf.challenge-operator.io/participant: "team1"
    ctf.challenge-operator.io/challenge: "web"
type: Opaque
stringData:
  flag: "CTF{team1-3f9a}"
---
# Source: challenge/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: web-team1
  namespace: ctf-team1
  labels:
    app.kubernetes.io/name: challenge
    app.kubernetes.io/instance: web-team1
    app.kubernetes.io/managed-by: challenge-operator
    helm.sh/chart: challenge-0.1.0
    ctf.challenge-operator.io/instance: web-team1
    ctf.challenge-operator.io/instance-namespace: ctf-team1
    ctf.challenge-operator.io/participant: "team1"
    ctf.challenge-operator.io/challenge: "web"
spec:
  type: ClusterIP
  selector:
    app.kubernetes.io/name: challenge
    app.kubernetes.io/instance: web-team1
  ports:
    - name: main
      port: 8080
      targetPort: main
      protocol: TCP
---
# Source: challenge/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-team1
  namespace: ctf-team1
  labels:
    app.kubernetes.io/name: challenge
    app.kubernetes.io/instance: web-team1
    app.kubernetes.io/managed-by: challenge-operator
    helm.sh/chart: challenge-0.1.0
    ctf.challenge-operator.io/instance: web-team1
    ctf.challenge-operator.io/instance-namespace: ctf-team1
    ctf.challenge-operator.io/participant: "team1"
    ctf.challenge-operator.io/challenge: "web"
spec:
  replicas: 1
  revisionHistoryLimit: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: challenge
      app.kubernetes.io/instance: web-team1
  template:
    metadata:
      labels:
        app.kubernetes.io/name: challenge
        app.kubernetes.io/instance: web-team1
        app.kubernetes.io/managed-by: challenge-operator
        helm.sh/chart: challenge-0.1.0
        ctf.challenge-operator.io/instance: web-team1
        ctf.challenge-operator.io/instance-namespace: ctf-team1
        ctf.challenge-operator.io/participant: "team1"
        ctf.challenge-operator.io/challenge: "web"
    spec:
      serviceAccountName: web-team1
      automountServiceAccountToken: false
      enableServiceLinks: false
      hostNetwork: false
      # The restricted Pod Security Standard, written here rather than taken from values.
      securityContext:
        runAsNonRoot: true
        runAsUser: 1000
        runAsGroup: 1000
        fsGroup: 1000
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: challenge
          image: "registry.ctf.example/web:1.0"
          imagePullPolicy: IfNotPresent
          ports:
            - name: main
              containerPort: 8080
              protocol: TCP
          env:
            - name: "MODE"
              value: "ctf"
          readinessProbe:
            tcpSocket:
              port: main
            periodSeconds: 2
          resources:
            limits:
              cpu: 500m
              memory: 256Mi
            requests:
              cpu: 50m
              memory: 64Mi
          securityContext:
            allowPrivilegeEscalation: false
            privileged: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            - name: flag
              mountPath: /flag/flag.txt
              subPath: flag
              readOnly: true
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        - name: flag
          secret:
            secretName: web-team1-flag
            defaultMode: 0444
---
# Source: challenge/templates/networkpolicy.yaml
# Isolation: the instance accepts connections on its ports from outside the
# cluster and from the ingress controller's namespace; it may resolve DNS and
# reach the internet, never the cluster's internal ranges.
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web-team1
  namespace: ctf-team1
  labels:
    app.kubernetes.io/name: challenge
    app.kubernetes.io/instance: web-team1
    app.kubernetes.io/managed-by: challenge-operator
    helm.sh/chart: challenge-0.1.0
    ctf.challenge-operator.io/instance: web-team1
    ctf.challenge-operator.io/instance-namespace: ctf-team1
    ctf.challenge-operator.io/participant: "team1"
    ctf.challenge-operator.io/challenge: "web"
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: challenge
      app.kubernetes.io/instance: web-team1
  policyTypes: ["Ingress", "Egress"]
  ingress:
    - ports:
        - port: 8080
          protocol: TCP
      from:
        - ipBlock:
            cidr: 0.0.0.0/0
            except:
              - "0.0.0.0/8"
              - "10.0.0.0/8"
              - "100.64.0.0/10"
              - "127.0.0.0/8"
              - "168.63.129.16/32"
              - "169.254.0.0/16"
              - "172.16.0.0/12"
              - "192.0.0.0/24"
              - "192.168.0.0/16"
        - ipBlock:
            cidr: "::/0"
            except:
              - "::/128"
              - "::1/128"
              - "fc00::/7"
              - "fd00:ec2::254/128"
              - "fe80::/10"
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: ingress-nginx
  egress:
    - ports:
        - port: 53
          protocol: UDP
        - port: 53
          protocol: TCP
      to:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: kube-system
          podSelector:
            matchLabels:
              k8s-app: kube-dns
    - to:
        - ipBlock:
            cidr: 0.0.0.0/0
            except:
              - "0.0.0.0/8"
              - "10.0.0.0/8"
              - "100.64.0.0/10"
              - "127.0.0.0/8"
              - "168.63.129.16/32"
              - "169.254.0.0/16"
              - "172.16.0.0/12"
              - "192.0.0.0/24"
              - "192.168.0.0/16"
        - ipBlock:
            cidr: "::/0"
            except:
              - "::/128"
              - "::1/128"
              - "fc00::/7"
              - "fd00:ec2::254/128"
              - "fe80::/10"
`

// TestFieldsOfAFutureKubernetes judges the fields of a rendered object as the API server reads
// them, not as the gate's Go types do: a field those types learn with a newer Kubernetes (the
// strict decoding refuses it until then) is refused by the tables until someone judges it.
func TestFieldsOfAFutureKubernetes(t *testing.T) {
	deploy := func() map[string]any {
		var raw map[string]any
		_, doc := marshal(deployment())
		NewWithT(t).Expect(yaml.Unmarshal([]byte(doc), &raw)).To(Succeed())
		return raw
	}
	pod := func(raw map[string]any) map[string]any {
		return raw["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	}
	tests := []struct {
		name, want string
		edit       func(map[string]any)
	}{
		{"as the chart renders it", "", func(map[string]any) {}},
		{"a null is no value", "", func(raw map[string]any) { pod(raw)["futureField"] = nil }},
		{"a pod field", "spec.template.spec.futureField", func(raw map[string]any) { pod(raw)["futureField"] = true }},
		{"an empty one", "spec.template.spec.futureField", func(raw map[string]any) { pod(raw)["futureField"] = map[string]any{} }},
		{"a container field", "spec.template.spec.containers[0].futureField", func(raw map[string]any) {
			pod(raw)["containers"].([]any)[0].(map[string]any)["futureField"] = "x"
		}},
		{"a volume source", "spec.template.spec.volumes[1].futureSource", func(raw map[string]any) {
			pod(raw)["volumes"].([]any)[1].(map[string]any)["futureSource"] = map[string]any{}
		}},
		{"a strategy beyond its zero value", "spec.strategy.futureField", func(raw map[string]any) {
			raw["spec"].(map[string]any)["strategy"] = map[string]any{"futureField": 1}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := deploy()
			tt.edit(raw)
			NewWithT(t).Expect(judged["Deployment"].unjudged("", raw)).To(Equal(tt.want))
		})
	}
}

// TestEveryKindHasItsFields keeps the tables beside the kinds the gate admits.
func TestEveryKindHasItsFields(t *testing.T) {
	g := NewWithT(t)
	for k := range kinds {
		g.Expect(judged).To(HaveKey(k.kind))
	}
	g.Expect(judged).To(HaveLen(len(kinds)))
}
