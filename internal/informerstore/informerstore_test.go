package informerstore

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// TestGetAnswersAsTheCacheDoes: a Get from the store of a synced informer
// answers what the cache answers (the object, a copy of its own, with its
// kind; NotFound for a missing one; an unstructured read), and a kind's
// second Get reads its store.
func TestGetAnswersAsTheCacheDoes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, k8s := controlplane.StartAPIServer(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	inner, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := New(inner, scheme)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "read"}, Data: map[string]string{"k": "v"}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cm)
	got := &corev1.ConfigMap{}
	deadline := time.Now().Add(10 * time.Second)
	for err := c.Get(ctx, key, got); err != nil; err = c.Get(ctx, key, got) {
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("reading the ConfigMap: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	fromStore := &corev1.ConfigMap{}
	if err := c.Get(ctx, key, fromStore); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.stores.Load(corev1.SchemeGroupVersion.WithKind("ConfigMap")); !ok {
		t.Fatal("the ConfigMaps' synced store was not kept: every Get goes through the cache")
	}
	fromCache := &corev1.ConfigMap{}
	if err := inner.Get(ctx, key, fromCache); err != nil {
		t.Fatal(err)
	}
	if fromStore.Data["k"] != "v" || fromStore.UID != fromCache.UID || fromStore.ResourceVersion != fromCache.ResourceVersion ||
		fromStore.GroupVersionKind() != fromCache.GroupVersionKind() || fromStore.Kind != "ConfigMap" {
		t.Errorf("the store's answer %+v, the cache's %+v", fromStore, fromCache)
	}
	fromStore.Data["k"] = "changed"
	again := &corev1.ConfigMap{}
	if err := c.Get(ctx, key, again); err != nil || again.Data["k"] != "v" {
		t.Errorf("a change to what a Get returned reached the store: %v, %v", again.Data, err)
	}

	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "missing"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("a missing ConfigMap: %v, want NotFound", err)
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: "default"}, ns); err != nil || ns.Name != "default" {
		t.Errorf("a cluster-scoped object: %v, %v", ns.Name, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err := c.Get(ctx, key, u); err != nil || u.GetUID() != fromCache.UID {
		t.Errorf("an unstructured read: %v, %v", u.GetUID(), err)
	}
}
