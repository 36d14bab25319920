package operator

// The manager's rights on the kinds charts/challenge renders, and on the
// Secrets where Helm stores releases. controller-gen turns them (with the
// markers of internal/controller) into the ClusterRole manager-role in
// config/rbac/role.yaml; `make manifests` splits that role by scope for the
// namespaced install (config/namespaced) and the OLM bundle. The rights a
// namespace per instance needs are in package nsperinstance, so that they
// are granted only where --namespace-per-instance is on.

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;secrets;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies;ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=tlsroutes;httproutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch
