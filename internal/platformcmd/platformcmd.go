// Package platformcmd is the `challenge-operator platform` subcommand: it
// makes the CTF platform's calls to the instancer's platform API, each
// signed for that one call (internal/platformauth), as a platform does: to
// try the contract by hand, or from a platform that shells out.
package platformcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/challenge-operator/challenge-operator/internal/platformauth"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

// Run makes one call: `platform verify --team T --template X --submission S`
// or `platform solved --team T --template X`, and prints the answer.
func Run(args []string, out io.Writer, client *http.Client) error {
	if len(args) == 0 || (args[0] != "verify" && args[0] != "solved") {
		return errors.New("want `platform verify` or `platform solved`")
	}
	call := args[0]
	fs := flag.NewFlagSet("platform "+call, flag.ContinueOnError)
	url := fs.String("url", "", "The instancer's address, e.g. https://instances.ctf.example.org/.")
	keyDir := fs.String("key-dir", "", "Directory of the platform's keys, one file per key id (as the instancer's --platform-key-dir).")
	kid := fs.String("kid", "", "Key id to sign with; needed when there are several keys.")
	team := fs.String("team", "", "Team id (spec.participant).")
	template := fs.String("template", "", "ChallengeTemplate name.")
	flagName := fs.String("flag", "", "verify: the template's flag (spec.flags), when it has several.")
	submission := fs.String("submission", "", "verify: what the team submitted.")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *url == "" || *keyDir == "" || *team == "" || *template == "" {
		return errors.New("--url, --key-dir, --team and --template are required")
	}
	keys, err := token.KeysFromDir(*keyDir)
	if err != nil {
		return err
	}
	id, key, err := pick(keys, *kid)
	if err != nil {
		return err
	}
	body := map[string]string{"team": *team, "template": *template}
	if call == "verify" {
		body["submission"] = *submission
		if *flagName != "" {
			body["flag"] = *flagName
		}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	path := "/api/v1/platform/" + call
	signed, err := platformauth.Sign(key, id, platformauth.NewJTI(), http.MethodPost, path, data, time.Now(), time.Minute)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(*url, "/")+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+signed)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if _, err := out.Write(answer); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, res.Status)
	}
	return nil
}

// pick is the key to sign with: kid's, or the only one.
func pick(keys token.Keys, kid string) (string, []byte, error) {
	if kid != "" {
		key, ok := keys[kid]
		if !ok {
			return "", nil, fmt.Errorf("no key %q", kid)
		}
		return kid, key, nil
	}
	if len(keys) != 1 {
		return "", nil, fmt.Errorf("%d keys: name one with --kid (%s)", len(keys), strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
	}
	for id, key := range keys {
		return id, key, nil
	}
	return "", nil, errors.New("no key")
}
