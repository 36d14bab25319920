// Package solvercheck builds a template's solver check, the organiser's
// solver run as a Job against a canary instance, and reads its outcome:
// the Job, its expected flags' Secret and the NetworkPolicy that lets it
// reach the canary's public endpoint and DNS alone. Pure: the controller
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

// NetworkPolicy lets canary's solver pods reach DNS and the canary's public
// endpoint ep, and nothing else; nothing reaches them. An endpoint at an IP
// is reached at that IP and port; one by name (an Ingress or Gateway host)
// through the ingress controllers' namespaces, on the endpoint's port and
// 80 and 443.
func NetworkPolicy(canary *ctfv1alpha1.Challenge, ep *ctfv1alpha1.Endpoint, ingressNamespaces []string) *networkingv1.NetworkPolicy {
	port := func(proto corev1.Protocol, p int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: ptr.To(proto), Port: ptr.To(intstr.FromInt32(p))}
	}
	dns := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolUDP, 53), port(corev1.ProtocolTCP, 53)}}
	proto := corev1.ProtocolTCP
	if ep.Protocol == ctfv1alpha1.ProtocolUDP {
		proto = corev1.ProtocolUDP
	}
	var endpoint networkingv1.NetworkPolicyEgressRule
	if ip := net.ParseIP(ep.Host); ip != nil {
		bits := 32
		if ip.To4() == nil {
			bits = 128
		}
		endpoint = networkingv1.NetworkPolicyEgressRule{
			To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: fmt.Sprintf("%s/%d", ip, bits)}}},
			Ports: []networkingv1.NetworkPolicyPort{port(proto, ep.Port)},
		}
	} else {
		endpoint = networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: ingressNamespaces,
			}}}}},
			Ports: []networkingv1.NetworkPolicyPort{port(proto, ep.Port), port(corev1.ProtocolTCP, 80), port(corev1.ProtocolTCP, 443)},
		}
	}
	meta := owned(canary, NetworkPolicyName(canary.Name))
	return &networkingv1.NetworkPolicy{
		ObjectMeta: meta,
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: meta.Labels},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{dns, endpoint},
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
