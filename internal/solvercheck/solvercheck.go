// Package solvercheck builds a template's solver check, the organiser's
// solver run as a Job against a canary instance, and reads its outcome:
// the Job, its expected flags' Secret, the NetworkPolicy that lets it
// reach DNS and its canary alone and the one that lets it into its canary.
// Pure: the controller
// reads and writes the cluster.
package solvercheck

import (
	"fmt"
	"net"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// The SolverHealthy condition's reasons, and the Events'.
const (
	// ReasonPassed: the last run passed.
	ReasonPassed = "SolverPassed"
	// ReasonFailed: the last run failed; the message says how.
	ReasonFailed = "SolverFailed"
	// ReasonCanaryNotRunning: no run yet, the canary is not Running.
	ReasonCanaryNotRunning = "CanaryNotRunning"
	// ReasonNoCanaryNamespace: the operator has no canary namespace.
	ReasonNoCanaryNamespace = "NoCanaryNamespace"
	// ReasonFlagUnavailable: the canary's expected flag cannot be read; the
	// message names the Secret, never a value.
	ReasonFlagUnavailable = "FlagUnavailable"
	// ReasonImageNotAllowed: the solver's image is from a registry the
	// cluster admin's bounds (or the template's policy) do not allow.
	ReasonImageNotAllowed = "ImageNotAllowed"
)

// ContainerName is the solver's container.
const ContainerName = "solver"

// Names of what one canary's solver check owns.
func SecretName(canary string) string        { return canary + "-solver" }
func NetworkPolicyName(canary string) string { return canary + "-solver" }
func JobName(canary string, run int32) string {
	return fmt.Sprintf("%s-run-%d", canary, run)
}

// ConnectionInfo is the address in ctfcli's convention: the URL of an
// HTTP endpoint, the command of one that needs one (TLS), else
// "nc HOST PORT".
func ConnectionInfo(ep *ctfv1alpha1.Endpoint) string {
	switch {
	case ep.URL != "":
		return ep.URL
	case ep.Connect != "":
		return ep.Connect
	}
	return fmt.Sprintf("nc %s %d", ep.Host, ep.Port)
}

// FlagEnv is the variable a named flag reaches the solver in: FLAG_ and
// its name, upper-cased, with "-" as "_".
func FlagEnv(name string) string {
	return "FLAG_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Secret holds the canary's expected flags (variable name to value), which
// the solver reads as its environment.
func Secret(canary *ctfv1alpha1.Challenge, flags map[string]string) *corev1.Secret {
	data := make(map[string][]byte, len(flags))
	for k, v := range flags {
		data[k] = []byte(v)
	}
	return &corev1.Secret{
		ObjectMeta: owned(canary, SecretName(canary.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// owned is the metadata of an object of canary's solver check: labelled
// with the canary, which owns it (the garbage collector takes it with the
// canary).
func owned(canary *ctfv1alpha1.Challenge, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: canary.Namespace,
		Labels:    map[string]string{ctfv1alpha1.SolverLabel: canary.Name},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: ctfv1alpha1.GroupVersion.String(), Kind: "Challenge",
			Name: canary.Name, UID: canary.UID, Controller: ptr.To(true),
		}},
	}
}

// solverUser runs the solver: no root, whatever the image says.
const solverUser = 65532

// Job is run number run of check against canary, whose endpoint is ep. It
// runs once (no retry: the next run is the retry), restricted, without a
// service account token or service links, with a writable /tmp only.
func Job(check *ctfv1alpha1.SolverCheck, canary *ctfv1alpha1.Challenge, ep *ctfv1alpha1.Endpoint, run int32) *batchv1.Job {
	info := ConnectionInfo(ep)
	args := make([]string, 0, len(check.Args)+2)
	for _, a := range check.Args {
		args = append(args, string(a))
	}
	args = append(args, "--connection-info", info)
	command := make([]string, 0, len(check.Command))
	for _, c := range check.Command {
		command = append(command, string(c))
	}
	meta := owned(canary, JobName(canary.Name, run))
	return &batchv1.Job{
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(int64(check.RunTimeout().Seconds())),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](solverUser),
						RunAsGroup:     ptr.To[int64](solverUser),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    ContainerName,
						Image:   check.Image,
						Command: command,
						Args:    args,
						Env: []corev1.EnvVar{
							{Name: "CONNECTION_INFO", Value: info},
							{Name: "HOST", Value: ep.Host},
							{Name: "PORT", Value: fmt.Sprint(ep.Port)},
						},
						EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: SecretName(canary.Name)}}}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{
						EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}}}},
				},
			},
		},
	}
}

// Reach is where a solver's connections may go, besides its canary's
// pods: the cluster DNS and, for a canary reached by name through an
// Ingress or a Gateway, the ingress controllers' namespaces.
type Reach struct {
	// DNSNamespace is where the cluster DNS pods run (k8s-app=kube-dns,
	// --dns-namespace), the one peer every instance may reach too.
	DNSNamespace string
	// IngressNamespaces are where the ingress controllers and gateways run
	// (--ingress-from-namespaces); none when empty.
	IngressNamespaces []string
	// Routed says the canary is exposed by an Ingress or a Gateway's route:
	// its endpoint is a host those namespaces' controllers serve.
	Routed bool
	// Pods are the canary's serving pods: the namespace they run in and
	// their instance's identity (identity.InstancePods), those of the
	// pooled instance it claimed if it claimed one.
	PodNamespace string
	Pods         map[string]string
}

// dnsPods select the cluster DNS, as the chart's instance policies do.
var dnsPods = map[string]string{"k8s-app": "kube-dns"}

// namespaceNamed selects the namespace name by the label the API server
// sets on every namespace.
func namespaceNamed(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: name}}
}

func policyPort(proto corev1.Protocol, p intstr.IntOrString) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(proto), Port: &p}
}

// endpointProtocol is the protocol ep is reached over.
func endpointProtocol(ep *ctfv1alpha1.Endpoint) corev1.Protocol {
	if ep.Protocol == ctfv1alpha1.ProtocolUDP {
		return corev1.ProtocolUDP
	}
	return corev1.ProtocolTCP
}

// podPort is the canary's pods' port that ep leads to: the port named as
// the endpoint, which is the Service's target port (charts/challenge names
// each target port after its port).
func podPort(ep *ctfv1alpha1.Endpoint) networkingv1.NetworkPolicyPort {
	return policyPort(endpointProtocol(ep), intstr.FromString(ep.Name))
}

// NetworkPolicy lets canary's solver pods reach exactly DNS (the cluster
// DNS pods of reach's namespace, port 53) and the canary: its serving
// pods on the port its endpoint ep leads to, which is where a ClusterIP,
// a node port or a load balancer's address is translated to; the address
// itself when ep is at an IP; and, only for a canary exposed by an Ingress
// or a route and only when the operator names ingress namespaces, their
// pods on the endpoint's port (and 80 and 443, which a URL may move
// between). Nothing reaches the solver. Valid whatever the flags: no peer
// is written without what it selects.
func NetworkPolicy(canary *ctfv1alpha1.Challenge, ep *ctfv1alpha1.Endpoint, reach Reach) *networkingv1.NetworkPolicy {
	dnsPort := intstr.FromInt32(53)
	egress := []networkingv1.NetworkPolicyEgressRule{{
		Ports: []networkingv1.NetworkPolicyPort{policyPort(corev1.ProtocolUDP, dnsPort), policyPort(corev1.ProtocolTCP, dnsPort)},
		To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: namespaceNamed(reach.DNSNamespace),
			PodSelector: &metav1.LabelSelector{MatchLabels: dnsPods}}},
	}, {
		Ports: []networkingv1.NetworkPolicyPort{podPort(ep)},
		To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: namespaceNamed(reach.PodNamespace),
			PodSelector: &metav1.LabelSelector{MatchLabels: reach.Pods}}},
	}}
	if ip := net.ParseIP(ep.Host); ip != nil {
		bits := 32
		if ip.To4() == nil {
			bits = 128
		}
		egress = append(egress, networkingv1.NetworkPolicyEgressRule{
			Ports: []networkingv1.NetworkPolicyPort{policyPort(endpointProtocol(ep), intstr.FromInt32(ep.Port))},
			To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: fmt.Sprintf("%s/%d", ip, bits)}}},
		})
	} else if reach.Routed && len(reach.IngressNamespaces) > 0 {
		ports := []networkingv1.NetworkPolicyPort{policyPort(corev1.ProtocolTCP, intstr.FromInt32(ep.Port))}
		for _, p := range []int32{80, 443} {
			if p != ep.Port {
				ports = append(ports, policyPort(corev1.ProtocolTCP, intstr.FromInt32(p)))
			}
		}
		egress = append(egress, networkingv1.NetworkPolicyEgressRule{
			Ports: ports,
			To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: reach.IngressNamespaces,
			}}}}},
		})
	}
	meta := owned(canary, NetworkPolicyName(canary.Name))
	return &networkingv1.NetworkPolicy{
		ObjectMeta: meta,
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: meta.Labels},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress:      egress,
		},
	}
}

// CanaryIngressName names the policy that lets canary's solver in.
func CanaryIngressName(canary string) string { return canary + "-from-solver" }

// CanaryIngress lets canary's solver pods into its serving pods (reach's),
// on the port ep leads to: an instance's own policy admits clients from
// outside the cluster and the ingress namespaces only, so without it the
// solver, in the canary namespace, is refused wherever policies are
// enforced. NetworkPolicies add up: this widens nothing else. It is owned
// by owner, the Challenge whose pods it selects when that lives in their
// namespace (nil otherwise: a namespace of the instance's own goes with it).
func CanaryIngress(canary *ctfv1alpha1.Challenge, ep *ctfv1alpha1.Endpoint, reach Reach, owner *ctfv1alpha1.Challenge) *networkingv1.NetworkPolicy {
	meta := metav1.ObjectMeta{Name: CanaryIngressName(canary.Name), Namespace: reach.PodNamespace,
		Labels: map[string]string{ctfv1alpha1.SolverLabel: canary.Name}}
	if owner != nil {
		meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: ctfv1alpha1.GroupVersion.String(), Kind: "Challenge",
			Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: meta,
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: reach.Pods},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{podPort(ep)},
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: namespaceNamed(canary.Namespace),
					PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ctfv1alpha1.SolverLabel: canary.Name}}}},
			}},
		},
	}
}

// Outcome reads a run's Job: done once it completed or failed, passed when
// it completed, and why it failed in the Job controller's words.
func Outcome(job *batchv1.Job) (done, passed bool, why string) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true, ""
		case batchv1.JobFailed:
			return true, false, strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return false, false, ""
}
