// Command local-cluster runs the test control plane until interrupted, for the
// demo and for poking at the operator by hand. It writes an admin kubeconfig.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

func main() {
	kubeconfig := flag.String("write-kubeconfig", "local-cluster.kubeconfig", "Where to write the admin kubeconfig.")
	crds := flag.String("crds", "config/crd/bases", "Directory of CRDs to install.")
	logDir := flag.String("log-dir", "", "Directory for the components' logs; a temporary one when empty.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := controlplane.Start(ctx, controlplane.Options{CRDDirectoryPaths: []string{*crds}, LogDir: *logDir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-cluster:", err)
		os.Exit(1)
	}
	defer c.Stop()
	data, err := os.ReadFile(c.Kubeconfig)
	if err == nil {
		err = os.WriteFile(*kubeconfig, data, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-cluster: writing kubeconfig:", err)
		return
	}
	fmt.Printf("local-cluster: ready; kubeconfig %s, logs in %s; Ctrl-C stops it\n", *kubeconfig, c.LogDir)
	<-ctx.Done()
}
