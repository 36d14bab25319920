package action

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helm stores a release record as a Secret holding the release as JSON,
// gzipped at gzip's best compression: 3.7 ms of CPU for this chart's
// record, which an install writes twice (pending, then deployed), the most
// expensive step of an install in the operator's CPU profile. The operator
// writes records with a recordEncoder, which compresses a chart once rather
// than in every record, and reads them with Helm's driver, as does the helm
// CLI: Helm reads a gzipped record at any level, in any number of members.

// recordType is the type of the Secret holding a Helm 3 release record.
const recordType = "helm.sh/release.v1"

// RecordSecrets is helm-operator-plugins' default storage (a release's
// records are Secrets in the custom resource's namespace, which owns them)
// with the records written by one recordEncoder.
func RecordSecrets() helmclient.ObjectToStorageDriverMapper {
	encoder := newRecordEncoder()
	return func(ctx context.Context, obj client.Object, cfg *rest.Config) (driver.Driver, error) {
		clientset, err := corev1client.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("create secrets client for storage: %w", err)
		}
		owner := metav1.NewControllerRef(obj, obj.GetObjectKind().GroupVersionKind())
		secrets := helmclient.NewOwnerRefSecretClient(clientset.Secrets(obj.GetNamespace()), []metav1.OwnerReference{*owner}, helmclient.MatchAllSecrets)
		d := driver.NewSecrets(secrets)
		if logger, err := logr.FromContext(ctx); err == nil {
			d.Log = func(format string, v ...any) { logger.V(1).Info(fmt.Sprintf(format, v...)) }
		}
		return &recordSecrets{Secrets: d, secrets: secrets, encoder: encoder}, nil
	}
}

// recordSecrets is Helm's Secrets driver but for how it encodes a record.
type recordSecrets struct {
	*driver.Secrets
	secrets corev1client.SecretInterface
	encoder *recordEncoder
}

// Create stores a new record, as Helm's driver does.
func (s *recordSecrets) Create(key string, rls *release.Release) error {
	obj, err := recordSecret(s.encoder, key, rls, "createdAt")
	if err != nil {
		return fmt.Errorf("create: failed to encode release %q: %w", rls.Name, err)
	}
	if _, err := s.secrets.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return driver.ErrReleaseExists
		}
		return fmt.Errorf("create: failed to create: %w", err)
	}
	return nil
}

// Update replaces a record, as Helm's driver does.
func (s *recordSecrets) Update(key string, rls *release.Release) error {
	obj, err := recordSecret(s.encoder, key, rls, "modifiedAt")
	if err != nil {
		return fmt.Errorf("update: failed to encode release %q: %w", rls.Name, err)
	}
	if _, err := s.secrets.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update: failed to update: %w", err)
	}
	return nil
}

// recordSecret is the Secret Helm's driver writes for rls, labels and all:
// the release's labels, the time of this write under stamp unless they
// carry it already (Helm's order), then Helm's own.
func recordSecret(encoder *recordEncoder, key string, rls *release.Release, stamp string) (*corev1.Secret, error) {
	data, err := encoder.encode(rls)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{stamp: strconv.FormatInt(time.Now().Unix(), 10)}
	maps.Copy(labels, rls.Labels)
	labels["name"] = rls.Name
	labels["owner"] = "helm"
	labels["status"] = rls.Info.Status.String()
	labels["version"] = strconv.Itoa(rls.Version)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key, Labels: labels},
		Type:       recordType,
		Data:       map[string][]byte{"release": data},
	}, nil
}
