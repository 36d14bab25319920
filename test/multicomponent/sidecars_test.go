package multicomponent_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

const nginxConf = "server { listen 80; location / { proxy_pass http://127.0.0.1:8080; } }\n"

// TestSidecarsRun: an application behind an nginx proxy in its own pod, on
// localhost, and a database with a metrics exporter beside it, in a
// namespace that enforces the restricted profile: Running, with every
// container of both pods as the template says, under its workload's
// security, and the Services carrying the sidecars' ports.
//
// The application listens on 127.0.0.1:8080 only, which no object names:
// nothing outside the pod may reach it but through the proxy. Its own ports
// (at least one, which the CRD requires) are the port it is reached on, the
// proxy's public 80, and the proxy declares none of its own: so the Service,
// the NetworkPolicy, the Ingress, CHALLENGE_URL and the default readiness
// probe all lead to the proxy. Declaring 8080 as the application's port
// instead would put it in the Service and let the Ingress (which leads to
// the first port) bypass the proxy, and the kubelet's readiness probe, which
// connects to the pod's address, would never reach a server bound to
// localhost.
func TestSidecarsRun(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h.Template(t, "sidecars", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Image = "registry.example/ctf/app:1"
		s.Ports = ports("http", 80)
		s.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, TLS: &ctfv1alpha1.IngressTLS{}}
		s.Env = []ctfv1alpha1.EnvVar{{Name: "LISTEN", Value: "127.0.0.1:8080"}}
		s.Sidecars = []ctfv1alpha1.Sidecar{{Name: "proxy", Image: "docker.io/nginxinc/nginx-unprivileged:1.27",
			Env:       []ctfv1alpha1.EnvVar{{Name: "UPSTREAM", Value: "http://127.0.0.1:8080"}},
			Resources: &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{Memory: ptr.To(ctfv1alpha1.Quantity("64Mi"))}},
			Container: ctfv1alpha1.Container{
				Files:   []ctfv1alpha1.File{{Path: "/etc/nginx/conf.d/default.conf", Content: nginxConf}},
				Scratch: []ctfv1alpha1.ScratchMount{{Path: "/var/cache/nginx", SizeLimit: ptr.To(ctfv1alpha1.Quantity("32Mi"))}},
				Probes:  &ctfv1alpha1.Probes{Liveness: &ctfv1alpha1.Probe{Exec: &ctfv1alpha1.ExecProbe{Command: []ctfv1alpha1.Argument{"nginx", "-t"}}}},
			}}}
		s.Components = []ctfv1alpha1.Component{{Name: "db", Image: "docker.io/library/postgres:16", Ports: ports("pg", 5432),
			Env:       []ctfv1alpha1.EnvVar{{Name: "POSTGRES_PASSWORD", Value: "postgres"}},
			Container: ctfv1alpha1.Container{Scratch: []ctfv1alpha1.ScratchMount{{Path: "/var/lib/postgresql/data"}, {Path: "/var/run/postgresql", Memory: true}}},
			Security:  &ctfv1alpha1.Security{RunAsUser: ptr.To[int64](999), RunAsGroup: ptr.To[int64](999)},
			Sidecars: []ctfv1alpha1.Sidecar{{Name: "exporter", Image: "quay.io/prometheuscommunity/postgres-exporter:v0.15.0", Ports: ports("metrics", 9187),
				Env:       []ctfv1alpha1.EnvVar{{Name: "DATA_SOURCE_NAME", Value: "postgresql://postgres:postgres@localhost:5432/postgres?sslmode=disable"}},
				Container: ctfv1alpha1.Container{KeepImageTmp: true, Args: []ctfv1alpha1.Argument{"--web.listen-address=:9187"}}}}}}
	})
	ns := h.Namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	ch := builders.FromTemplate(ns, "sidecars", "team-a", "sidecars")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	host := got.Status.Endpoint.Host
	g.Expect(got.Status.Endpoint.URL).To(Equal("https://" + host + "/"))

	hosts := []corev1.EnvVar{{Name: "PRIMARY_HOST", Value: ch.Name}, {Name: "DB_HOST", Value: ch.Name + "--db"}}
	address := []corev1.EnvVar{{Name: "CHALLENGE_HOST", Value: host}, {Name: "CHALLENGE_URL", Value: "https://" + host + "/"}}
	env := func(own ...corev1.EnvVar) []corev1.EnvVar {
		return append(append(append([]corev1.EnvVar{}, hosts...), own...), address...)
	}
	floor := func(memory string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse(memory),
				corev1.ResourceEphemeralStorage: resource.MustParse("256Mi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
				corev1.ResourceEphemeralStorage: resource.MustParse("64Mi")},
		}
	}
	tmp := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}}}
	}
	restricted := func(sc *corev1.SecurityContext) {
		g.Expect(sc).To(Equal(&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			Privileged: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)}))
	}

	// The primary's pod: the application, then its proxy, under one securityContext.
	web := deployment(g, got, ch.Name).Spec.Template.Spec
	g.Expect(web.SecurityContext.Sysctls).To(Equal([]corev1.Sysctl{{Name: policy.UnprivilegedPortSysctl, Value: "80"}}), "the proxy binds 80 without root")
	g.Expect(web.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
	g.Expect(web.Containers).To(HaveLen(2))
	app, proxy := web.Containers[0], web.Containers[1]
	g.Expect([]string{app.Name, proxy.Name}).To(Equal([]string{"challenge", "proxy"}))
	g.Expect([]string{app.Image, proxy.Image}).To(Equal([]string{"registry.example/ctf/app:1", "docker.io/nginxinc/nginx-unprivileged:1.27"}))
	g.Expect(app.Ports).To(Equal([]corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}))
	g.Expect(proxy.Ports).To(BeEmpty(), "it serves the workload's port")
	g.Expect(app.Env).To(Equal(env(corev1.EnvVar{Name: "LISTEN", Value: "127.0.0.1:8080"})))
	g.Expect(proxy.Env).To(Equal(env(corev1.EnvVar{Name: "UPSTREAM", Value: "http://127.0.0.1:8080"})), "the hosts first, as the main container's")
	restricted(app.SecurityContext)
	restricted(proxy.SecurityContext)
	g.Expect(app.Resources).To(Equal(floor("256Mi")))
	g.Expect(proxy.Resources).To(Equal(floor("64Mi")), "its own memory limit over the floor")
	g.Expect(app.ReadinessProbe.TCPSocket.Port).To(Equal(intstr.FromString("http")), "ready once the proxy answers")
	g.Expect(proxy.ReadinessProbe).To(BeNil(), "no default probe of its own")
	g.Expect(proxy.LivenessProbe.Exec.Command).To(Equal([]string{"nginx", "-t"}))
	g.Expect(proxy.VolumeMounts).To(Equal([]corev1.VolumeMount{
		{Name: "proxy-tmp", MountPath: "/tmp"},
		{Name: "proxy-scratch-0", MountPath: "/var/cache/nginx"},
		{Name: "proxy-files", MountPath: "/etc/nginx/conf.d/default.conf", SubPath: "challenge.proxy.f0", ReadOnly: true},
	}))
	g.Expect(app.VolumeMounts).To(Equal([]corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}))
	g.Expect(web.Volumes).To(Equal([]corev1.Volume{
		tmp("tmp"), tmp("proxy-tmp"),
		{Name: "proxy-scratch-0", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("32Mi"))}}},
		{Name: "proxy-files", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ch.Name + "-files"}, DefaultMode: ptr.To[int32](0o644),
			Items: []corev1.KeyToPath{{Key: "challenge.proxy.f0", Path: "challenge.proxy.f0", Mode: ptr.To[int32](0o444)}}}}},
	}))

	// The database's pod: postgres, then its exporter, under the component's own user.
	db := deployment(g, got, ch.Name+"--db").Spec.Template.Spec
	g.Expect(db.SecurityContext.RunAsUser).To(Equal(ptr.To[int64](999)))
	g.Expect(db.SecurityContext.Sysctls).To(BeEmpty(), "no port below 1024")
	g.Expect(db.Containers).To(HaveLen(2))
	pg, exporter := db.Containers[0], db.Containers[1]
	g.Expect([]string{pg.Name, exporter.Name}).To(Equal([]string{"db", "exporter"}))
	g.Expect(exporter.Image).To(Equal("quay.io/prometheuscommunity/postgres-exporter:v0.15.0"))
	g.Expect(exporter.Args).To(Equal([]string{"--web.listen-address=:9187"}))
	g.Expect(exporter.Ports).To(Equal([]corev1.ContainerPort{{Name: "metrics", ContainerPort: 9187, Protocol: corev1.ProtocolTCP}}))
	g.Expect(exporter.Env).To(Equal(env(corev1.EnvVar{Name: "DATA_SOURCE_NAME", Value: "postgresql://postgres:postgres@localhost:5432/postgres?sslmode=disable"})))
	restricted(pg.SecurityContext)
	restricted(exporter.SecurityContext)
	g.Expect(exporter.Resources).To(Equal(floor("256Mi")))
	g.Expect(exporter.VolumeMounts).To(BeEmpty(), "the image's own /tmp")
	g.Expect(exporter.ReadinessProbe).To(BeNil())
	g.Expect(pg.ReadinessProbe.TCPSocket.Port).To(Equal(intstr.FromString("pg")))
	g.Expect(db.Volumes).To(HaveLen(3), "postgres's /tmp and two scratch directories, none of the exporter's")

	// The Services carry the sidecars' ports; the Ingress leads to the workload's first.
	svc := func(name string) []corev1.ServicePort {
		s := &corev1.Service{}
		g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)).To(Succeed())
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].NodePort = 0
		}
		return s.Spec.Ports
	}
	g.Expect(svc(ch.Name)).To(Equal([]corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}),
		"the proxy's port only: the application's localhost one is in no object")
	g.Expect(svc(ch.Name + "--db")).To(Equal([]corev1.ServicePort{
		{Name: "pg", Port: 5432, TargetPort: intstr.FromString("pg"), Protocol: corev1.ProtocolTCP},
		{Name: "metrics", Port: 9187, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP},
	}))
	dbPolicy := networkPolicy(g, got, ch.Name+"--db").Spec
	g.Expect(dbPolicy.Ingress).To(HaveLen(1))
	g.Expect(dbPolicy.Ingress[0].Ports).To(Equal([]networkingv1.NetworkPolicyPort{
		{Port: ptr.To(intstr.FromInt32(5432)), Protocol: ptr.To(corev1.ProtocolTCP)}, {Port: ptr.To(intstr.FromInt32(9187)), Protocol: ptr.To(corev1.ProtocolTCP)},
	}), "the instance's pods reach the exporter too")
	ing := &networkingv1.Ingress{}
	g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ch.Name}, ing)).To(Succeed())
	g.Expect(ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name).To(Equal("http"))
	cm := &corev1.ConfigMap{}
	g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ch.Name + "-files"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"challenge.proxy.f0": nginxConf}))

	var pods corev1.PodList
	g.Expect(h.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(2), "the API server admitted both pods under the restricted profile")
	for _, p := range pods.Items {
		g.Expect(p.Spec.Containers).To(HaveLen(2), p.Name)
	}

	g.Expect(h.Client.Delete(ctx, ch)).To(Succeed())
	h.EventuallyGone(t, ch, harness.Timeout, "the Challenge is gone with both pods' objects")
}
