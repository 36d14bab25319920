package challengepool

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// FlagDeliveryReconciler writes a claimed pooled instance's perTeam flags,
// its claimant's, into its running pods, restarting nothing. A pooled
// instance runs before its team is known: each such flag's directory is an
// empty volume of its container (values.FilledAtClaim). At claim it writes
// the team's flags into a Secret of the claim's own (ClaimFlagSecret) and
// adds to each pod an ephemeral container, the operator's own image running
// `write-flags`, which reads each value from that Secret, refuses one that
// is not the value expected (its SHA-256 is an argument: a kubelet's stale
// Secret), and writes and reads back each file. The kubelet's report that
// the writer exited 0 is the proof of delivery: once every pod has it, the
// pooled instance is annotated with the claim (FlagsDeliveredAnnotation),
// and only then is the claimant Running. A writer that fails is tried
// again with a new one, up to maxFlagWriters times per pod; a pod whose
// every writer failed fails the claim (ClaimFlags). A pod that comes after
// the delivery (a pod replaced) gets writers of its own, and the annotation
// is taken back until it has them: the claimant is Pending meanwhile.
type FlagDeliveryReconciler struct {
	// Client reads pooled Challenges, templates and pods from the cache, and
	// writes the writers and the annotation.
	Client client.Client
	// Live reads the instance's pods, whose spec the cache does not keep.
	Live  client.Reader
	Pools *pool.Pools
	Codec *flagtag.Codec
	// Image is the writer's image: the operator's own.
	Image string
	// MaxConcurrentReconciles is how many claims are delivered at once.
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups="",resources=pods/ephemeralcontainers,verbs=update

// maxFlagWriters bounds the writers one pod gets for one claim.
const maxFlagWriters = 5

// flagMountRoot is where a writer mounts each flag directory, by volume
// name: two containers' directories may have the same path.
const flagMountRoot = "/run/challenge-flags/"

// FlagClaim names one claim in the writers and the annotation: the first 10
// hex characters of the SHA-256 of the claimant's UID.
func FlagClaim(claimant types.UID) string {
	sum := sha256.Sum256([]byte(claimant))
	return hex.EncodeToString(sum[:5])
}

// ClaimFlags tells where the perTeam flags of the claim of pooled by the
// Challenge of UID claimant stand, from pooled's pods as listed (their
// status is enough: the cache keeps no pod spec). pending: not every
// current pod holds them yet, one of a workload with flags is missing, or
// the delivery was not proven (FlagsDeliveredAnnotation). failed, when not
// "": a current pod had its every writer fail and gets no more; it says
// which and how, for the claimant's status (never a value: the writers
// print none, and only their exit codes are read).
func ClaimFlags(tmpl *ctfv1alpha1.ChallengeTemplate, pooled *ctfv1alpha1.Challenge, claimant types.UID, pods []corev1.Pod) (pending bool, failed string) {
	if tmpl == nil {
		return false, ""
	}
	flags := flagsAtClaim(tmpl)
	if len(flags) == 0 {
		return false, ""
	}
	claim := FlagClaim(claimant)
	pending = pooled.Annotations[ctfv1alpha1.FlagsDeliveredAnnotation] != claim
	delivered := map[string]bool{} // by workload ("" the primary)
	for i := range pods {
		pod := &pods[i]
		workload := pod.Labels[ctfv1alpha1.ComponentLabel]
		if len(flagsOf(flags, workload)) == 0 || !current(pod) {
			continue
		}
		done, failures, last := writersReported(pod, claim)
		switch {
		case done:
			delivered[workload] = true
		case failures >= maxFlagWriters:
			return true, fmt.Sprintf("the team's flags could not be written into pod %s/%s: its %d writers failed, the last with exit code %d; delete this Challenge to start another",
				pod.Namespace, pod.Name, failures, last.ExitCode)
		default:
			pending = true
		}
	}
	for _, f := range flags {
		pending = pending || !delivered[f.Component]
	}
	return pending, ""
}

// current tells whether pod is one of its workload's own: not on its way
// out nor ended. Each current pod of a workload with flags gets them.
func current(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp.IsZero() && pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded
}

// writersReported sums up what the kubelet reported of pod's writers of
// claim: whether one exited 0, and how many exited otherwise, the last
// (the highest numbered) of them last.
func writersReported(pod *corev1.Pod, claim string) (done bool, failures int, last *corev1.ContainerStateTerminated) {
	lastN := -1
	for i := range pod.Status.EphemeralContainerStatuses {
		st := &pod.Status.EphemeralContainerStatuses[i]
		n, t := writerNumber(st.Name, claim), st.State.Terminated
		if n < 0 || t == nil {
			continue
		}
		if t.ExitCode == 0 {
			return true, 0, nil
		}
		failures++
		if n > lastN {
			lastN, last = n, t
		}
	}
	return false, failures, last
}

// writerName names pod's nth writer of claim: flags-<claim>-<n>.
func writerName(claim string, n int) string { return fmt.Sprintf("flags-%s-%d", claim, n) }

// writerNumber is the n of a writer of claim named name, -1 for any other container.
func writerNumber(name, claim string) int {
	rest, ok := strings.CutPrefix(name, "flags-"+claim+"-")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// flagsAtClaim are tmpl's flags filled at claim.
func flagsAtClaim(tmpl *ctfv1alpha1.ChallengeTemplate) []*ctfv1alpha1.NamedFlag {
	var out []*ctfv1alpha1.NamedFlag
	for i := range tmpl.Spec.Flags {
		if f := &tmpl.Spec.Flags[i]; values.FilledAtClaim(tmpl, f) {
			out = append(out, f)
		}
	}
	return out
}

// Reconcile delivers one pooled instance's flags.
func (r *FlagDeliveryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pooled := &ctfv1alpha1.Challenge{}
	if err := r.Client.Get(ctx, req.NamespacedName, pooled); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	_, claimant, claimed := pool.Claimant(pooled)
	if !claimed || !r.Pools.IsPooled(pooled) || !pooled.DeletionTimestamp.IsZero() || r.Codec == nil {
		return ctrl.Result{}, nil
	}
	tmpl := &ctfv1alpha1.ChallengeTemplate{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pooled.Spec.Template}, tmpl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	flags := flagsAtClaim(tmpl)
	if len(flags) == 0 {
		return ctrl.Result{}, nil
	}
	team := pooled.Annotations[ctfv1alpha1.ClaimantParticipantAnnotation]
	claim := FlagClaim(claimant)
	data := make(map[string][]byte, len(flags))
	digests := make(map[string]string, len(flags))
	for _, f := range flags {
		value := ctfflag.PerTeam(r.Codec, tmpl.Name, f.Name, team, cmp.Or(f.PerTeam.Format, ctfflag.DefaultFormat))
		sum := sha256.Sum256([]byte(value))
		data["flag."+f.Name], digests[f.Name] = []byte(value), hex.EncodeToString(sum[:])
	}
	// The team's flags go into a Secret of the claim's own, written here:
	// the writers need not wait for the claim's Helm upgrade to rewrite the
	// instance's Secret.
	if err := r.claimSecret(ctx, pooled, claim, data); err != nil {
		return ctrl.Result{}, err
	}
	// Read live: the cache keeps no pod spec, and a writer is added to the
	// pod as it is.
	var pods corev1.PodList
	if err := r.Live.List(ctx, &pods, client.InNamespace(pooled.Namespace), client.MatchingLabels{ctfv1alpha1.InstanceLabel: pooled.Name}); err != nil {
		return ctrl.Result{}, err
	}
	delivered := map[string]bool{} // by workload ("" the primary)
	waiting := false
	for i := range pods.Items {
		pod := &pods.Items[i]
		workload := pod.Labels[ctfv1alpha1.ComponentLabel]
		mine := flagsOf(flags, workload)
		if len(mine) == 0 || !current(pod) {
			continue
		}
		done, err := r.deliver(ctx, pooled, pod, claim, mine, digests)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !done {
			waiting = true
			continue
		}
		delivered[workload] = true
	}
	for _, f := range flags {
		if !delivered[f.Component] {
			waiting = true // its workload's pods are not there yet
		}
	}
	if waiting == (pooled.Annotations[ctfv1alpha1.FlagsDeliveredAnnotation] != claim) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(pooled.DeepCopy())
	if waiting {
		// Delivered once, but a pod came since (a pod replaced) that does
		// not hold the flags: the proof no longer stands.
		delete(pooled.Annotations, ctfv1alpha1.FlagsDeliveredAnnotation)
	} else {
		pooled.Annotations[ctfv1alpha1.FlagsDeliveredAnnotation] = claim
	}
	return ctrl.Result{}, r.Client.Patch(ctx, pooled, patch)
}

// claimSecret writes the claim's Secret: the team's flags, owned by the
// pooled instance (gone with it), labelled with the claim. An existing one
// is the claim's: a pooled instance is claimed once.
func (r *FlagDeliveryReconciler) claimSecret(ctx context.Context, pooled *ctfv1alpha1.Challenge, claim string, data map[string][]byte) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: pooled.Namespace, Name: identity.ClaimFlagSecret(pooled.Name),
			Labels:          map[string]string{ctfv1alpha1.ClaimLabel: claim},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ctfv1alpha1.GroupVersion.String(), Kind: "Challenge", Name: pooled.Name, UID: pooled.UID}}},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if err := r.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("writing the claim's flags Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// flagsOf are the flags of flags delivered to workload.
func flagsOf(flags []*ctfv1alpha1.NamedFlag, workload string) []*ctfv1alpha1.NamedFlag {
	var out []*ctfv1alpha1.NamedFlag
	for _, f := range flags {
		if f.Component == workload {
			out = append(out, f)
		}
	}
	return out
}

// deliver reports whether pod holds the claim's flags: a writer of the
// claim exited 0. Otherwise it adds a writer, unless one runs or the pod
// had its last.
func (r *FlagDeliveryReconciler) deliver(ctx context.Context, pooled *ctfv1alpha1.Challenge, pod *corev1.Pod, claim string,
	flags []*ctfv1alpha1.NamedFlag, digests map[string]string) (bool, error) {
	attempts := 0
	for _, c := range pod.Spec.EphemeralContainers {
		if writerNumber(c.Name, claim) >= 0 {
			attempts++
		}
	}
	if attempts > 0 {
		last := writerName(claim, attempts-1)
		i := slices.IndexFunc(pod.Status.EphemeralContainerStatuses, func(st corev1.ContainerStatus) bool { return st.Name == last })
		if i < 0 {
			return false, nil // the kubelet has not reported it yet
		}
		t := pod.Status.EphemeralContainerStatuses[i].State.Terminated
		if t == nil {
			return false, nil // starting or running
		}
		if t.ExitCode == 0 {
			return true, nil
		}
	}
	if attempts >= maxFlagWriters {
		// Its claimant is in Error (ClaimFlags), until the team deletes it.
		logf.FromContext(ctx).Info("the flags' writers failed on a pod; the team's instance is in Error", "pod", pod.Name, "claim", claim, "writers", attempts)
		return false, nil
	}
	pod = pod.DeepCopy()
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, r.writer(pooled, pod, writerName(claim, attempts), flags, digests))
	if err := r.Client.SubResource("ephemeralcontainers").Update(ctx, pod); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("adding the flags' writer to pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return false, nil
}

// writer is the ephemeral container that writes flags into pod's flag
// directories: each value from the instance's Secret, checked against its
// digest. It runs as the pod's user (writerSecurity) and is never restarted.
func (r *FlagDeliveryReconciler) writer(pooled *ctfv1alpha1.Challenge, pod *corev1.Pod, name string, flags []*ctfv1alpha1.NamedFlag, digests map[string]string) corev1.EphemeralContainer {
	c := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: r.Image, Args: []string{"write-flags"},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          writerSecurity(pod),
	}}
	for i, f := range flags {
		env, volume := "FLAG_"+strconv.Itoa(i), values.FlagDirVolume(f)
		file := flagMountRoot + volume + "/" + path.Base(cmp.Or(f.Path, values.DefaultFlagPath))
		mode := ptr.Deref(f.FileMode, values.DefaultFlagFileMode)
		c.Args = append(c.Args, "--file", fmt.Sprintf("%s=%s:%04o:%s", file, env, mode, digests[f.Name]))
		c.Env = append(c.Env, corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: identity.ClaimFlagSecret(pooled.Name)}, Key: "flag." + f.Name}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: flagMountRoot + volume})
	}
	return c
}

// writerSecurity is the writer's securityContext in pod: the pod's own
// user and group, so that a flag's file is its challenge's (a 0400 flag is
// its owner's alone), and nothing more: every capability dropped, no
// privilege escalation, a read-only root filesystem, the runtime's seccomp
// profile. It asks for a non-root user unless the pod runs as root: the
// kubelet refuses to start a container that asks for one and runs as uid 0
// (CreateContainerConfigError), and root without a capability is held to
// the files' modes as any user is. A pod that names no user runs the
// writer as its image's, the operator's (65532), which must not be root.
func writerSecurity(pod *corev1.Pod) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		sc.RunAsUser, sc.RunAsGroup = psc.RunAsUser, psc.RunAsGroup
	}
	if ptr.Deref(sc.RunAsUser, -1) != 0 {
		sc.RunAsNonRoot = ptr.To(true)
	}
	return sc
}

// SetupWithManager watches the pooled instances and their pods.
func (r *FlagDeliveryReconciler) SetupWithManager(mgr ctrl.Manager) error {
	inPool := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return r.Pools.Holds(o.GetNamespace()) }))
	return ctrl.NewControllerManagedBy(mgr).
		Named("flag-delivery").
		WithOptions(ctrlcontroller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles)}).
		For(&ctfv1alpha1.Challenge{}, inPool).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(controller.ChallengeOfInstanceObject), inPool).
		Complete(r)
}
