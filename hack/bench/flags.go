package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// The pooled-flags systems are pooled ones whose template has a perTeam
// flag: each claim is Running only once the operator's writer has put the
// team's flag into the pooled instance's pod and the kubelet reported it.

// flagWriterImage is the writers' image; KWOK's nodes run nothing.
const flagWriterImage = "registry.example/challenge-operator:bench"

// withFlags tells whether sys's template has a perTeam flag.
func withFlags(sys string) bool { return strings.HasPrefix(sys, "pooled-flags") }

// flagArgs are the operator's flags for per-team flags: a fresh key file
// in dir and the writers' image.
func flagArgs(dir string) ([]string, error) {
	file := filepath.Join(dir, "flag-key")
	if err := os.WriteFile(file, []byte("the bench's flag key, 32 bytes or more"), 0o600); err != nil {
		return nil, err
	}
	return []string{"--flag-key-file=" + file, "--flag-writer-image=" + flagWriterImage}, nil
}

// perTeamFlags are the pooled template's flags in a pooled-flags system.
func perTeamFlags() []ctfv1alpha1.NamedFlag {
	return []ctfv1alpha1.NamedFlag{{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"},
		FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/flag/flag.txt"}}}
}

// answerWriters stands for the kubelets until ctx ends: every flag writer
// added to a pod of the pool is reported to have exited 0, one status
// write per writer, as a kubelet's own.
func answerWriters(ctx context.Context, cl client.Client) {
	_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.InNamespace(poolNamespace)); err != nil {
			return false, nil //nolint:nilerr // try again at the next tick
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if len(pod.Spec.EphemeralContainers) == len(pod.Status.EphemeralContainerStatuses) {
				continue
			}
			reported := map[string]bool{}
			for _, st := range pod.Status.EphemeralContainerStatuses {
				reported[st.Name] = true
			}
			for _, c := range pod.Spec.EphemeralContainers {
				if !reported[c.Name] {
					pod.Status.EphemeralContainerStatuses = append(pod.Status.EphemeralContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
						State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}})
				}
			}
			if err := cl.Status().Update(ctx, pod); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return false, nil //nolint:nilerr // try again at the next tick
			}
		}
		return false, nil
	})
}
