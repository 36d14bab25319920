// Package multicomponent_test runs instances made of several services on the
// real control plane (a web application with its cache, its database, its
// admin bot) and instances reached through the Gateway API's routes, whose CRDs it
// installs from the module the operator builds with. The admin allows
// privileged templates in the gvisor runtime class, as an organiser of a bot
// challenge would ask, and one Gateway, whose pods may connect to instances.
package multicomponent_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/security"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

var h *harness.Harness

// sandbox is the runtime class privileged components must run in.
const sandbox = "gvisor"

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{AsServiceAccount: true, GatewayAPI: true, Operator: operator.Options{
		MaxConcurrentReconciles: 4,
		FlagCodec:               harness.FlagCodec(),
		Values: values.Settings{Gateways: []ctfv1alpha1.GatewayRef{gateway, adminGateway}, IngressFromNamespaces: []string{gateway.Namespace, adminGateway.Namespace}, Security: security.Bounds{
			MaxProfile:            ctfv1alpha1.ProfilePrivileged,
			SandboxRuntimeClasses: []string{sandbox},
			AllowedCapabilities:   []string{"SYS_ADMIN"},
		}},
	}}, &h, func() {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: sandbox}, Handler: "runsc"}
		if err := h.Client.Create(context.Background(), rc); err != nil {
			panic(err)
		}
		for _, gw := range []ctfv1alpha1.GatewayRef{gateway, adminGateway} {
			if err := harness.CreateGateway(context.Background(), h.Client, gw); err != nil {
				panic(err)
			}
		}
	}))
}

func ports(name string, n int32) []ctfv1alpha1.ChallengePort {
	return []ctfv1alpha1.ChallengePort{{Name: name, Port: n, Protocol: ctfv1alpha1.ProtocolTCP}}
}

// webApp is the primary component of every shape: a web application behind
// its instance's own HTTPS host.
func webApp(s *ctfv1alpha1.ChallengeTemplateSpec) {
	s.Ports = ports("http", 8080)
	s.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, TLS: &ctfv1alpha1.IngressTLS{}}
}

const initSQL = `CREATE TABLE users (name text, password text);
INSERT INTO users VALUES ('admin', 'it''s a secret');
`

// shape is a real challenge's set of services.
type shape struct {
	name       string
	components []ctfv1alpha1.Component
	// env is the primary component's own environment, which may name its
	// components' hosts.
	env []ctfv1alpha1.EnvVar
	// check asserts the instance's objects beyond what every shape shares.
	check func(g Gomega, ch *ctfv1alpha1.Challenge)
}

var shapes = []shape{
	{
		name: "web and redis",
		components: []ctfv1alpha1.Component{{Name: "redis", Image: "docker.io/library/redis:7", Ports: ports("redis", 6379),
			Container: ctfv1alpha1.Container{Scratch: []ctfv1alpha1.ScratchMount{{Path: "/data"}}}}},
		env: []ctfv1alpha1.EnvVar{{Name: "REDIS_URL", Value: "redis://$(REDIS_HOST):6379/0"}},
		check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
			web := deployment(g, ch, ch.Name)
			g.Expect(web.Spec.Template.Spec.Containers[0].Env[:3]).To(Equal([]corev1.EnvVar{
				{Name: "PRIMARY_HOST", Value: ch.Name}, {Name: "REDIS_HOST", Value: ch.Name + "--redis"},
				{Name: "REDIS_URL", Value: "redis://$(REDIS_HOST):6379/0"}}), "the hosts first, so that the template's env may use them")
			redis := deployment(g, ch, ch.Name+"--redis")
			ctr := redis.Spec.Template.Spec.Containers[0]
			g.Expect(ctr.ReadinessProbe.TCPSocket.Port).To(Equal(intstr.FromString("redis")), "ready once it accepts connections")
			g.Expect(ctr.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "scratch-0", MountPath: "/data"}))
			svc := &corev1.Service{}
			g.Expect(h.Client.Get(context.Background(), client.ObjectKey{Namespace: ch.Namespace, Name: ch.Name + "--redis"}, svc)).To(Succeed())
			g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP), "never exposed")
			g.Expect(svc.Spec.Ports).To(HaveLen(1))
			g.Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(6379))
		},
	},
	{
		name: "web and postgres with its init SQL",
		components: []ctfv1alpha1.Component{{Name: "postgres", Image: "docker.io/library/postgres:16", Ports: ports("pg", 5432),
			Env: []ctfv1alpha1.EnvVar{{Name: "POSTGRES_PASSWORD", Value: "postgres"}, {Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"}},
			Container: ctfv1alpha1.Container{
				Files: []ctfv1alpha1.File{{Path: "/docker-entrypoint-initdb.d/init.sql", Content: initSQL}},
				Scratch: []ctfv1alpha1.ScratchMount{{Path: "/var/lib/postgresql/data", SizeLimit: ptr.To(ctfv1alpha1.Quantity("128Mi"))},
					{Path: "/var/run/postgresql", Memory: true}},
			},
			Security: &ctfv1alpha1.Security{RunAsUser: ptr.To[int64](999), RunAsGroup: ptr.To[int64](999)}}},
		env: []ctfv1alpha1.EnvVar{{Name: "DATABASE_URL", Value: "postgres://postgres:postgres@$(POSTGRES_HOST):5432/postgres"}},
		check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
			pg := deployment(g, ch, ch.Name+"--postgres")
			pod := pg.Spec.Template.Spec
			g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "files",
				MountPath: "/docker-entrypoint-initdb.d/init.sql", SubPath: "postgres.f0", ReadOnly: true}))
			g.Expect(pod.SecurityContext.RunAsUser).To(Equal(ptr.To[int64](999)), "postgres's own user")
			cm := &corev1.ConfigMap{}
			g.Expect(h.Client.Get(context.Background(), client.ObjectKey{Namespace: ch.Namespace, Name: ch.Name + "-files"}, cm)).To(Succeed())
			g.Expect(cm.Data).To(Equal(map[string]string{"postgres.f0": initSQL}), "carried byte for byte")
		},
	},
	{
		name: "web and its admin bot, privileged in a sandbox with internet egress",
		components: []ctfv1alpha1.Component{{Name: "bot", Image: "ghcr.io/example/admin-bot:1", InternetEgress: true,
			Env: []ctfv1alpha1.EnvVar{{Name: "TARGET", Value: "http://$(PRIMARY_HOST):8080/"}},
			Security: &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, RuntimeClassName: sandbox,
				Capabilities: &ctfv1alpha1.Capabilities{Add: []ctfv1alpha1.Capability{"SYS_ADMIN"}}, SeccompProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementUnconfined}},
			Container: ctfv1alpha1.Container{Scratch: []ctfv1alpha1.ScratchMount{{Path: "/dev/shm", Memory: true}}}}},
		check: func(g Gomega, ch *ctfv1alpha1.Challenge) {
			bot := deployment(g, ch, ch.Name+"--bot")
			pod := bot.Spec.Template.Spec
			g.Expect(pod.RuntimeClassName).To(Equal(ptr.To(sandbox)))
			g.Expect(pod.Containers[0].SecurityContext.Capabilities.Add).To(Equal([]corev1.Capability{"SYS_ADMIN"}))
			g.Expect(pod.Containers[0].Env).To(Equal([]corev1.EnvVar{
				{Name: "PRIMARY_HOST", Value: ch.Name},
				{Name: "TARGET", Value: "http://$(PRIMARY_HOST):8080/"},
				{Name: "CHALLENGE_HOST", Value: ch.Status.Endpoint.Host},
				{Name: "CHALLENGE_URL", Value: "https://" + ch.Status.Endpoint.Host + "/"},
			}), "the web component by name and the instance's own URL")
			web := deployment(g, ch, ch.Name)
			g.Expect(web.Spec.Template.Spec.RuntimeClassName).To(BeNil(), "the application stays restricted")
			g.Expect(web.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
			g.Expect(networkPolicy(g, ch, ch.Name+"--bot").Spec.Egress).To(ContainElement(HaveField("To", ContainElement(
				HaveField("IPBlock.CIDR", "0.0.0.0/0")))), "the bot reaches the internet")
			g.Expect(networkPolicy(g, ch, ch.Name).Spec.Egress).NotTo(ContainElement(HaveField("To", ContainElement(
				HaveField("IPBlock", Not(BeNil()))))), "the application does not")
			var svc corev1.Service
			err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: ch.Namespace, Name: ch.Name + "--bot"}, &svc)
			g.Expect(err).To(HaveOccurred(), "a bot listens nowhere: no Service")
		},
	},
}

func deployment(g Gomega, ch *ctfv1alpha1.Challenge, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(h.Client.Get(context.Background(), client.ObjectKey{Namespace: ch.Namespace, Name: name}, d)).To(Succeed())
	return d
}

func networkPolicy(g Gomega, ch *ctfv1alpha1.Challenge, name string) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{}
	g.Expect(h.Client.Get(context.Background(), client.ObjectKey{Namespace: ch.Namespace, Name: name}, np)).To(Succeed())
	return np
}

// TestComponentShapesRun: each shape is Running once every component is,
// with each component's objects as its template says, and is gone, every
// component with it, once deleted.
func TestComponentShapesRun(t *testing.T) {
	for i, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ctx := context.Background()
			name := fmt.Sprintf("multi-%d", i)
			tmpl := h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				webApp(s)
				s.Env = sh.env
				s.Components = sh.components
			})
			profile := security.ProfileOf(tmpl.Spec.Security)
			for _, c := range tmpl.Spec.Components {
				if p := security.ProfileOf(c.Security); p == ctfv1alpha1.ProfilePrivileged {
					profile = p
				}
			}
			ns := h.Namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": string(profile)})
			ch := builders.FromTemplate(ns, name, "team-a", name)
			g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
			got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
			g.Expect(got.Status.Endpoint.URL).To(HavePrefix("https://"))
			sh.check(g, got)

			var pods corev1.PodList
			g.Expect(h.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1+len(sh.components)), "the API server admitted every component's pod")
			var deps appsv1.DeploymentList
			g.Expect(h.Client.List(ctx, &deps, client.InNamespace(ns))).To(Succeed())
			g.Expect(deps.Items).To(HaveLen(1 + len(sh.components)))
			for _, d := range deps.Items {
				g.Expect(d.Status.ReadyReplicas).To(BeEquivalentTo(1), "Running only once %s is ready", d.Name)
			}

			g.Expect(h.Client.Delete(ctx, ch)).To(Succeed())
			for _, c := range sh.components {
				h.EventuallyGone(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ch.Name + "--" + c.Name}},
					harness.Timeout, "component "+c.Name+" is removed with its instance")
				h.EventuallyGone(t, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ch.Name + "--" + c.Name}},
					harness.Timeout, "and its NetworkPolicy")
			}
			h.EventuallyGone(t, ch, harness.Timeout, "the Challenge is gone once every object of every component is")
		})
	}
}

// TestComponentsAreIsolated: two teams' instances of one web-and-redis
// template side by side. Each redis admits exactly its own instance's pods
// on its one port and reaches nothing but DNS and its own instance; the
// selector of "its own instance" picks no pod of the other team's; nothing
// routes to redis from outside (a ClusterIP Service, no Ingress backend).
func TestComponentsAreIsolated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "isolated", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		webApp(s)
		s.Components = []ctfv1alpha1.Component{{Name: "redis", Image: "docker.io/library/redis:7", Ports: ports("redis", 6379)}}
	})
	ns := h.Namespace(t, nil)
	teams := []*ctfv1alpha1.Challenge{builders.FromTemplate(ns, "team-a", "team-a", "isolated"), builders.FromTemplate(ns, "team-b", "team-b", "isolated")}
	for _, ch := range teams {
		g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	}
	for _, ch := range teams {
		h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	}

	for i, ch := range teams {
		own := map[string]string{ctfv1alpha1.InstanceLabel: ch.Name}
		dns := networkingv1.NetworkPolicyEgressRule{
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(53)), Protocol: ptr.To(corev1.ProtocolUDP)}, {Port: ptr.To(intstr.FromInt32(53)), Protocol: ptr.To(corev1.ProtocolTCP)}},
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
			}},
		}
		ownPods := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: own}}}
		g.Expect(networkPolicy(g, ch, ch.Name+"--redis").Spec).To(Equal(networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{ctfv1alpha1.NameLabel: "redis", ctfv1alpha1.AppInstanceLabel: ch.Name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(6379)), Protocol: ptr.To(corev1.ProtocolTCP)}},
				From:  ownPods,
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{dns, {To: ownPods}},
		}), "redis: its own instance's pods on 6379, nothing else")
		web := networkPolicy(g, ch, ch.Name).Spec
		g.Expect(web.Ingress).To(HaveLen(2))
		g.Expect(web.Ingress[1]).To(Equal(networkingv1.NetworkPolicyIngressRule{
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}},
			From:  ownPods,
		}), "the web component admits its own components on its own port")
		g.Expect(web.Egress).To(Equal([]networkingv1.NetworkPolicyEgressRule{dns, {To: ownPods}}), "and reaches them, and DNS, only")

		var selected corev1.PodList
		g.Expect(h.Client.List(ctx, &selected, client.InNamespace(ns), client.MatchingLabels(own))).To(Succeed())
		g.Expect(selected.Items).To(HaveLen(2), "its web and redis pods")
		other := teams[1-i].Name
		for _, p := range selected.Items {
			g.Expect(p.Labels).To(HaveKeyWithValue(ctfv1alpha1.InstanceLabel, ch.Name), "never %s's", other)
		}

		svc := &corev1.Service{}
		g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ch.Name + "--redis"}, svc)).To(Succeed())
		g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	}
	var ingresses networkingv1.IngressList
	g.Expect(h.Client.List(ctx, &ingresses, client.InNamespace(ns))).To(Succeed())
	g.Expect(ingresses.Items).To(HaveLen(2))
	for _, ing := range ingresses.Items {
		for _, r := range ing.Spec.Rules {
			for _, p := range r.HTTP.Paths {
				g.Expect(p.Backend.Service.Name).NotTo(ContainSubstring("--"), "no route leads to a component")
			}
		}
	}
}
