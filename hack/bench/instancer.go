package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/token"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// benchKeys is the instancer's token key, drawn once: its instance names
// are keyed with it (instancer.NameKey), and measure predicts them.
var benchKeys = func() token.Keys {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return token.Keys{"bench": key}
}()

// startInstancer runs the instancer as it ships (its own process, the same
// binary) and returns how team i starts its instance: a POST with the team's
// token, minted here before the clock starts.
func startInstancer(ctx context.Context, cluster *controlplane.Cluster, bin string, chs []*ctfv1alpha1.Challenge) (func(i int) error, *controlplane.Process, error) {
	keyDir := filepath.Join(cluster.LogDir, "instancer-keys")
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return nil, nil, err
	}
	key := benchKeys["bench"]
	if err := os.WriteFile(filepath.Join(keyDir, "bench"), key, 0o600); err != nil {
		return nil, nil, err
	}
	keys := benchKeys
	tokens := make([]string, len(chs))
	for i, ch := range chs {
		t, err := token.Mint(keys, "bench", ch.Spec.Participant, time.Hour, time.Now())
		if err != nil {
			return nil, nil, err
		}
		tokens[i] = t
	}
	cmd := exec.Command(filepath.Join(bin, "manager"), "instancer", "--bind-address="+instancerAddr,
		"--health-probe-bind-address="+instancerProbeAddr, "--metrics-bind-address=0", "--namespace="+benchNamespace, "--key-dir="+keyDir)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
	p, err := controlplane.StartProcess(cmd, filepath.Join(cluster.LogDir, "instancer.log"))
	if err != nil {
		return nil, nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		res, err := http.Get("http://" + instancerProbeAddr + "/readyz")
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet: poll again
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK, nil
	}); err != nil {
		return nil, p, fmt.Errorf("instancer not ready: %w (log: %s)", err, p.Log)
	}
	body := []byte(fmt.Sprintf(`{"template": %q}`, pooledTemplate))
	return func(i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+instancerAddr+"/api/v1/instances", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tokens[i])
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = res.Body.Close() }()
		if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(res.Body)
			return fmt.Errorf("POST for %s: %s: %s", chs[i].Spec.Participant, res.Status, msg)
		}
		return nil
	}, p, nil
}
