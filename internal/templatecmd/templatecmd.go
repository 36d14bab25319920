// Package templatecmd is the `challenge-operator template` subcommand:
// `template import` turns a docker-compose file or a kCTF challenge.yaml
// into a ChallengeTemplate.
package templatecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/internal/importer"
)

// Run runs `template import [--name N] FILE`: the template's YAML goes to
// out, ready for kubectl apply, and the report of what was not carried (or
// carried differently) to report, one line each.
func Run(ctx context.Context, args []string, out, report io.Writer) error {
	if len(args) == 0 || args[0] != "import" {
		return errors.New("usage: challenge-operator template import [--name NAME] [--secret-namespace NS] FILE (a docker-compose file or a kCTF challenge.yaml)")
	}
	fs := flag.NewFlagSet("template import", flag.ContinueOnError)
	fs.SetOutput(report)
	name := fs.String("name", "", "Name of the ChallengeTemplate (a compose file's: its directory's name when unset; a kCTF challenge's: its own).")
	secretNamespace := fs.String("secret-namespace", "", "Namespace of the organiser's Secrets (one of the operator's --flag-secret-namespaces): a compose file's secrets become files from the Secret named after the template there.")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("template import needs exactly one file")
	}
	res, err := importFile(ctx, *name, fs.Arg(0), importer.Options{SecretNamespace: *secretNamespace})
	if err != nil {
		return err
	}
	y, err := res.YAML()
	if err != nil {
		return err
	}
	if _, err := out.Write(y); err != nil {
		return err
	}
	for _, l := range res.Report.Lines() {
		_, _ = fmt.Fprintln(report, l)
	}
	return nil
}

// importFile reads a kCTF challenge by its apiVersion, anything else as a compose file.
func importFile(ctx context.Context, name, path string, opts importer.Options) (importer.Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return importer.Result{}, err
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	if yaml.Unmarshal(data, &head) == nil && head.APIVersion == importer.KCTFAPIVersion {
		res, err := importer.FromKCTF(data)
		if err == nil && name != "" {
			res.Template.Name = name
		}
		return res, err
	}
	return importer.FromCompose(ctx, name, path, opts)
}
