package importer

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// KCTFAPIVersion is the apiVersion of a kCTF challenge.yaml.
const KCTFAPIVersion = "kctf.dev/v1"

// kctfChallenge is what a kCTF challenge.yaml says, as far as a template can
// carry it; Extra holds every other key of its spec, to be reported.
type kctfChallenge struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Image                string `json:"image"`
		PowDifficultySeconds int    `json:"powDifficultySeconds"`
		Network              struct {
			Public bool `json:"public"`
			Ports  []struct {
				Name       string `json:"name"`
				Protocol   string `json:"protocol"`
				Port       int32  `json:"port"`
				TargetPort int32  `json:"targetPort"`
			} `json:"ports"`
		} `json:"network"`
		Healthcheck struct {
			Enabled bool `json:"enabled"`
		} `json:"healthcheck"`
		AllowConnectTo []string `json:"allowConnectTo"`
		PodTemplate    *struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"podTemplate"`
	} `json:"spec"`
}

// kctfSpecKeys are the spec keys FromKCTF reads; "deployed" says whether
// kCTF runs it at all, which a template does not need.
var kctfSpecKeys = []string{"image", "powDifficultySeconds", "network", "healthcheck", "allowConnectTo", "podTemplate", "deployed"}

// FromKCTF imports a kCTF challenge.yaml. Its image runs nsjail, which needs
// root, SYS_ADMIN and no seccomp or AppArmor confinement: the template is
// privileged, and the report says to give it a sandbox runtime class or to
// run the challenge's server without the jail.
func FromKCTF(data []byte) (Result, error) {
	var k kctfChallenge
	if err := yaml.Unmarshal(data, &k); err != nil {
		return Result{}, fmt.Errorf("reading the kCTF challenge: %w", err)
	}
	if k.APIVersion != KCTFAPIVersion || k.Kind != "Challenge" {
		return Result{}, fmt.Errorf("not a kCTF challenge: apiVersion %q, kind %q", k.APIVersion, k.Kind)
	}
	name := dnsLabel(k.Metadata.Name, 63)
	if name == "" {
		return Result{}, fmt.Errorf("the kCTF challenge has no usable metadata.name (%q)", k.Metadata.Name)
	}
	var r Report
	tmpl := newTemplate(name)
	spec := &tmpl.Spec
	spec.Image = k.Spec.Image
	if spec.Image == "" {
		spec.Image = name + "-challenge"
		r.notCarried("image: kCTF builds it from the challenge's Dockerfile: build and push it, then set spec.image (%s for now)", spec.Image)
	}
	for _, p := range k.Spec.Network.Ports {
		port := cmp.Or(p.TargetPort, p.Port)
		pname := dnsLabel(p.Name, 15)
		if pname == "" || slices.ContainsFunc(spec.Ports, func(q ctfv1alpha1.ChallengePort) bool { return q.Name == pname }) {
			pname = fmt.Sprintf("tcp-%d", port)
		}
		spec.Ports = append(spec.Ports, ctfv1alpha1.ChallengePort{Name: pname, Port: port, Protocol: ctfv1alpha1.ProtocolTCP})
		if strings.EqualFold(p.Protocol, "HTTPS") && len(spec.Ports) == 1 {
			spec.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, TLS: &ctfv1alpha1.IngressTLS{}}
			r.changed("port %d (HTTPS): the instance's own host under --ingress-domain, behind an Ingress with TLS", port)
		}
	}
	if len(spec.Ports) == 0 {
		spec.Ports = []ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1337, Protocol: ctfv1alpha1.ProtocolTCP}}
		r.changed("network.ports: none: 1337, kCTF's usual port, assumed")
	}
	if k.Spec.Network.Public && spec.Expose == nil {
		r.changed("network.public: choose how teams reach it (expose.type TLSRoute for ncat --ssl on a shared port, or NodePort; ClusterIP until then)")
	}
	spec.Security = securityFor("the kCTF image (nsjail)", true, nil, nil, []string{"SYS_ADMIN"}, false, &r)
	unconfined := &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementUnconfined}
	spec.Security.SeccompProfile, spec.Security.AppArmorProfile = unconfined, unconfined
	r.changed("the kCTF image (nsjail): or run the challenge's server without the jail, in restricted: command [\"/home/user/chal\"] and no security section")
	if k.Spec.PowDifficultySeconds > 0 {
		r.notCarried("powDifficultySeconds %d: no proof of work in front of instances; the instancer's per-team limits bound starts", k.Spec.PowDifficultySeconds)
	}
	if k.Spec.Healthcheck.Enabled {
		r.notCarried("healthcheck: kCTF runs it as an image of its own; write it as a probe (probes.liveness.exec)")
	}
	for _, other := range k.Spec.AllowConnectTo {
		r.notCarried("allowConnectTo %s: name it as a component or a shared Service (sharedServices)", other)
	}
	if pt := k.Spec.PodTemplate; pt != nil {
		podTemplate(spec, &pt.Template.Spec, &r)
	}
	if err := unreadKeys(data, &r); err != nil {
		return Result{}, err
	}
	return Result{Template: tmpl, Report: r}, nil
}

// podTemplate carries the challenge container's environment and resources
// from a kCTF podTemplate.
func podTemplate(spec *ctfv1alpha1.ChallengeTemplateSpec, pod *corev1.PodSpec, r *Report) {
	for _, ctr := range pod.Containers {
		if ctr.Name != "challenge" {
			r.notCarried("podTemplate container %s: only the challenge container is carried", ctr.Name)
			continue
		}
		for _, e := range ctr.Env {
			if e.ValueFrom != nil {
				r.notCarried("podTemplate env %s: read from another object; use the template's flag or secretEnv", e.Name)
				continue
			}
			spec.Env = append(spec.Env, ctfv1alpha1.EnvVar{Name: e.Name, Value: e.Value})
		}
		spec.Resources = kctfResources(ctr.Resources)
		for _, m := range ctr.VolumeMounts {
			r.notCarried("podTemplate volume mount %s: use files or scratch", m.MountPath)
		}
	}
	if len(pod.Volumes) > 0 {
		r.notCarried("podTemplate volumes: use files or scratch")
	}
}

func kctfResources(res corev1.ResourceRequirements) *ctfv1alpha1.Resources {
	amounts := func(l corev1.ResourceList) *ctfv1alpha1.ResourceAmounts {
		if len(l) == 0 {
			return nil
		}
		a := &ctfv1alpha1.ResourceAmounts{}
		if q, ok := l[corev1.ResourceCPU]; ok {
			a.CPU = quantity(q.String())
		}
		if q, ok := l[corev1.ResourceMemory]; ok {
			a.Memory = quantity(q.String())
		}
		return a
	}
	out := &ctfv1alpha1.Resources{Limits: amounts(res.Limits), Requests: amounts(res.Requests)}
	if out.Limits == nil && out.Requests == nil {
		return nil
	}
	return out
}

func quantity(s string) *ctfv1alpha1.Quantity {
	q := ctfv1alpha1.Quantity(s)
	return &q
}

// unreadKeys reports the spec keys FromKCTF does not read.
func unreadKeys(data []byte, r *Report) error {
	var raw struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(raw.Spec)) {
		if !slices.Contains(kctfSpecKeys, k) {
			r.notCarried("spec.%s", k)
		}
	}
	return nil
}
