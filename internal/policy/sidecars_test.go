package policy

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// proxy is the sidecar of the fixtures with one.
const proxy = "proxy"

// withSidecar gives one workload of cf (the primary's or the component's) a proxy sidecar as the
// chart renders it: its main container's securityContext and resource floor, its own image,
// port, env and /tmp; the workload expects it.
func withSidecar(cf *componentFixture, primary bool) workloadObjects {
	w := cf.workload(primary)
	i := 1
	if primary {
		i = 0
	}
	cf.in.Workloads[i].Sidecars = []string{proxy}
	pod := &(*w.deploy).Spec.Template.Spec
	ctr := pod.Containers[0].DeepCopy()
	ctr.Name, ctr.Image = proxy, "registry.ctf.example/nginx:1"
	ctr.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	ctr.Env = []corev1.EnvVar{{Name: "UPSTREAM", Value: "127.0.0.1:8080"}}
	ctr.ReadinessProbe = nil
	ctr.VolumeMounts = []corev1.VolumeMount{{Name: proxy + "-tmp", MountPath: "/tmp"}}
	pod.Containers = append(pod.Containers, *ctr)
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: proxy + "-tmp",
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}}})
	return w
}

// sidecar is the workload's sidecar container.
func (w workloadObjects) sidecar() *corev1.Container {
	return &(*w.deploy).Spec.Template.Spec.Containers[1]
}

func (w workloadObjects) containers() *[]corev1.Container {
	return &(*w.deploy).Spec.Template.Spec.Containers
}

func TestSidecarsPass(t *testing.T) {
	for _, own := range []bool{false, true} {
		for _, primary := range []bool{true, false} {
			g := NewWithT(t)
			cf := newComponentFixture(own)
			granted(nil)(cf.fixture)
			withSidecar(cf, primary)
			g.Expect(Check(cf.render(), cf.in)).To(Succeed(), "own namespace %v, primary %v", own, primary)
		}
	}
}

// TestSidecarsRefused: a workload's pod has exactly its main container and its sidecars, by name
// and in order, and each sidecar is held to every rule its main container is: the workload's
// securityContext exactly, the resource ceilings, probes without a host, allowed images, no host
// port, no Secret but the instance's.
func TestSidecarsRefused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rule  string
		apply func(cf *componentFixture, w workloadObjects)
	}{
		{"an extra container beside its sidecar", ruleContainers, func(_ *componentFixture, w workloadObjects) {
			miner := w.sidecar().DeepCopy()
			miner.Name, miner.Image = "miner", "registry.ctf.example/miner:1"
			*w.containers() = append(*w.containers(), *miner)
		}},
		{"its sidecar left out", ruleContainers, func(_ *componentFixture, w workloadObjects) { *w.containers() = (*w.containers())[:1] }},
		{"its sidecar renamed", ruleContainers, func(_ *componentFixture, w workloadObjects) { w.sidecar().Name = "proxy2" }},
		{"its main container renamed", ruleContainers, func(_ *componentFixture, w workloadObjects) { w.ctr().Name = "app" }},
		{"its sidecar before its main container", ruleContainers, func(_ *componentFixture, w workloadObjects) {
			c := *w.containers()
			c[0], c[1] = c[1], c[0]
		}},
		{"a sidecar its template does not have", ruleContainers, func(cf *componentFixture, _ workloadObjects) {
			for i := range cf.in.Workloads {
				cf.in.Workloads[i].Sidecars = nil
			}
		}},
		{"its sidecar as an init container", ruleContainers, func(_ *componentFixture, w workloadObjects) {
			pod := &(*w.deploy).Spec.Template.Spec
			pod.InitContainers = []corev1.Container{*w.sidecar()}
			pod.Containers = pod.Containers[:1]
		}},
		{"its sidecar with a capability its Security did not grant", ruleSecContext, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().SecurityContext.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
		}},
		{"its sidecar with another user", ruleSecContext, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().SecurityContext.RunAsUser = ptr.To[int64](1001)
		}},
		{"its sidecar privileged", rulePodSecurity, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().SecurityContext.Privileged = ptr.To(true)
		}},
		{"its sidecar without a securityContext", rulePodSecurity, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().SecurityContext = nil
		}},
		{"its sidecar without a memory limit", ruleResources, func(_ *componentFixture, w workloadObjects) {
			delete(w.sidecar().Resources.Limits, corev1.ResourceMemory)
		}},
		{"its sidecar's cpu over the ceiling", ruleResources, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().Resources.Limits[corev1.ResourceCPU] = resource.MustParse("8")
		}},
		{"its sidecar with a device its Security did not grant", ruleResources, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().Resources.Limits["devices.kubevirt.io/kvm"] = resource.MustParse("1")
		}},
		{"its sidecar's probe naming a host", ruleProbeHost, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Path: "/", Port: intstr.FromInt32(80)}}}
		}},
		{"its sidecar's image from the metadata address", ruleImageRegistry, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().Image = "169.254.169.254/latest:1"
		}},
		{"its sidecar binding a host port", ruleHostPort, func(_ *componentFixture, w workloadObjects) { w.sidecar().Ports[0].HostPort = 80 }},
		{"its sidecar reading another instance's Secret", ruleSecretRef, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().Env = append(w.sidecar().Env, corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "web-team2-flag"}, Key: "flag"}}})
		}},
		{"its sidecar with envFrom", ruleSecretRef, func(_ *componentFixture, w workloadObjects) {
			w.sidecar().EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}}
		}},
	} {
		for _, primary := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, primary %v", tt.name, primary), func(t *testing.T) {
				g := NewWithT(t)
				cf := newComponentFixture(false)
				granted(nil)(cf.fixture)
				w := withSidecar(cf, primary)
				tt.apply(cf, w)
				err := Check(cf.render(), cf.in)
				var v *Violation
				g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
				g.Expect(v.Rule).To(Equal(tt.rule), v.Error())
				g.Expect(v.Object).To(Equal(fmt.Sprintf("Deployment %s/%s", namespace, w.name)), v.Error())
			})
		}
	}
}
