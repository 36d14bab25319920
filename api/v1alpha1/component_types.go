package v1alpha1

// Component is one more service of every instance beside its primary one
// (the template's own image and ports): a database, a cache, an admin bot.
// It runs as its own Deployment with a Service of its own when it has ports,
// reachable from the instance's other components on those ports only and,
// unless it is exposed, from nothing outside the instance. Every component of an instance, the
// primary one included, finds the others through the environment:
// <NAME>_HOST holds a component's host name (REDIS_HOST for "redis",
// WEB_BOT_HOST for "web-bot"), PRIMARY_HOST the primary one's.
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",message="a component's port names must be unique"
// +kubebuilder:validation:XValidation:rule="!has(self.expose) || !has(self.expose.type) || self.expose.type == 'ClusterIP' || (has(self.ports) && size(self.ports) > 0)",message="an exposed component needs a port"
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.port == p.port && q.protocol == p.protocol))",message="a component must not repeat a port and protocol"
// +kubebuilder:validation:XValidation:rule="!has(self.probes) || ((!has(self.probes.readiness) || ((!has(self.probes.readiness.http) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.readiness.http.port))) && (!has(self.probes.readiness.tcp) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.readiness.tcp.port))))) && (!has(self.probes.startup) || ((!has(self.probes.startup.http) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.startup.http.port))) && (!has(self.probes.startup.tcp) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.startup.tcp.port))))) && (!has(self.probes.liveness) || ((!has(self.probes.liveness.http) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.liveness.http.port))) && (!has(self.probes.liveness.tcp) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.liveness.tcp.port))))))",message="a probe's port must name one of the component's ports"
// +kubebuilder:validation:XValidation:rule="!has(self.sidecars) || self.sidecars.all(s, s.name != self.name)",message="a sidecar must not be named as its component's container"
// +kubebuilder:validation:XValidation:rule="!has(self.sidecars) || self.sidecars.all(s, !has(s.ports) || s.ports.all(p, self.sidecars.all(t, t.name == s.name || !has(t.ports) || !t.ports.exists(q, q.name == p.name || (q.port == p.port && q.protocol == p.protocol)))))",message="two sidecars of a pod must not share a port name or number"
// +kubebuilder:validation:XValidation:rule="!has(self.sidecars) || self.sidecars.all(s, !has(s.ports) || s.ports.all(p, !has(self.ports) || !self.ports.exists(q, q.name == p.name || (q.port == p.port && q.protocol == p.protocol))))",message="a sidecar's ports must differ in name and number from its component's"
// +kubebuilder:validation:XValidation:rule="!has(self.memoryTmp) || !self.memoryTmp || !has(self.keepImageTmp) || !self.keepImageTmp",message="memoryTmp needs the operator's /tmp: not with keepImageTmp"
// +kubebuilder:validation:XValidation:rule="!has(self.exposePorts) || (has(self.ports) && self.exposePorts.all(e, self.ports.exists(p, p.name == e.port && (!has(p.protocol) || p.protocol == 'TCP')) && self.ports[0].name != e.port))",message="exposePorts names the component's TCP ports but its first, which expose exposes"
type Component struct {
	// Name of the component: a DNS label of at most 8 characters (so that
	// "challenge", the primary component's, is never one), not "primary".
	// Its objects are named "<instance>--<name>".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'primary'",message="primary names the instance's primary component (PRIMARY_HOST)"
	Name string `json:"name"`

	// Image of the component's container.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`
	Image string `json:"image"`

	// Replicas of the component's pod, 1 when unset, at most the template's
	// policy.maxReplicas (1 when unset): a stateless worker pool; above it,
	// the instance is an Error (PolicyViolation). Its <NAME>_HOST Service
	// balances connections over every ready replica. With bareNames, its
	// bare name answers with every replica's address (one A record each,
	// ready or not, in the order DNS gives: clients that take the first
	// spread by DNS round-robin), never one replica's alone.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Ports the component listens on, for the instance's other components
	// only; none for a component nothing connects to (a bot).
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Ports []ChallengePort `json:"ports,omitempty"`

	// Env is the component's environment, after the operator's <NAME>_HOST
	// variables, so that a value may use them: "redis://$(REDIS_HOST):6379".
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// Resources of the component's container, within the template's
	// policy like the primary one's.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// Container is the component's command line, probes, files and
	// writable directories.
	Container `json:",inline"`

	// WritableRootFilesystem lets the container write anywhere in its own
	// filesystem (within the ephemeral-storage limit), for images that
	// write where no scratch directory can be named in advance.
	// +optional
	WritableRootFilesystem bool `json:"writableRootFilesystem,omitempty"`

	// Security is what the component may do on its node, within the
	// operator's flags like the template's own: an admin bot may be
	// privileged in a sandbox while the application stays restricted.
	// Restricted when unset, whatever the template's own section says.
	// +optional
	Security *Security `json:"security,omitempty"`

	// Expose makes the component's first port reachable from outside the
	// instance as the primary component's are (a second service teams
	// connect to): its own host under --ingress-domain for Ingress and the
	// routes; internal (ClusterIP) when unset.
	// +optional
	Expose *Expose `json:"expose,omitempty"`

	// InternetEgress lets the component reach the internet (everything
	// outside the internal ranges), as policy.internetEgress does the
	// primary component: an admin bot fetching a team's page.
	// +optional
	InternetEgress bool `json:"internetEgress,omitempty"`

	// SecretEnv are environment variables of the component's container
	// whose values are organiser Secrets' keys, from the namespaces flags
	// may come from, as the template's secretEnv are the primary's: a
	// database password, an API key.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(e, self.exists_one(f, f.name == e.name))",message="secretEnv names must be unique"
	// +optional
	SecretEnv []SecretEnvVar `json:"secretEnv,omitempty"`

	// Flag delivers the instance's flag (the template's flag) to the
	// component's container too, as a file or in a variable: a flag service
	// beside the application. Needs the template's flag.
	// +kubebuilder:validation:XValidation:rule="self.mount != 'Env' || has(self.envName)",message="flag.envName is required when flag.mount is Env"
	// +optional
	Flag *FlagDelivery `json:"flag,omitempty"`

	// ExposePorts exposes more of the component's ports, each on a host of
	// its own, beside its first port's exposure.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(e, self.exists_one(f, f.port == e.port))",message="a port is exposed once"
	// +optional
	ExposePorts []PortExposure `json:"exposePorts,omitempty"`

	// Sidecars are more containers in the component's pod, sharing its
	// network (localhost) and its security.
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:XValidation:rule="self.all(s, self.exists_one(t, t.name == s.name))",message="sidecar names must be unique"
	// +optional
	Sidecars []Sidecar `json:"sidecars,omitempty"`
}

// Sidecar is one more container in a workload's pod (the primary's or a
// component's), sharing its network, so that the two talk over localhost
// (a proxy in front of an application, a bot beside a web server), and its
// lifetime. It runs with its workload's securityContext and counts against
// the template's resource policy like any container.
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",message="a sidecar's port names must be unique"
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.port == p.port && q.protocol == p.protocol))",message="a sidecar must not repeat a port and protocol"
type Sidecar struct {
	// Name of the container: a DNS label of at most 15 characters, unique in
	// its pod, never "challenge" (the primary's container).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'challenge'",message="challenge names the primary workload's container"
	Name string `json:"name"`

	// Image of the sidecar's container.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`
	Image string `json:"image"`

	// Ports the sidecar listens on, reached as its workload's own (its
	// Service's): a proxy's public port in front of the application's
	// localhost one. Names and ports are unique across the pod.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Ports []ChallengePort `json:"ports,omitempty"`

	// Env is the sidecar's environment, after the operator's variables.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// SecretEnv are variables from the organiser's Secrets, as a
	// component's.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(e, self.exists_one(f, f.name == e.name))",message="secretEnv names must be unique"
	// +optional
	SecretEnv []SecretEnvVar `json:"secretEnv,omitempty"`

	// Flag delivers the instance's flag to the sidecar, as a component's.
	// +kubebuilder:validation:XValidation:rule="self.mount != 'Env' || has(self.envName)",message="flag.envName is required when flag.mount is Env"
	// +optional
	Flag *FlagDelivery `json:"flag,omitempty"`

	// Resources of the sidecar's container, within the template's policy.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// Container is the sidecar's command line, probes, files and writable
	// directories. Its probes name its own ports.
	Container `json:",inline"`
}

// SecretFile is one key of an organiser's Secret mounted into a container
// as a file: a TLS key, a service account's credentials, a config with a
// password in it. The operator copies the value into the instance's own
// Secret, as it does secretEnv, from the namespaces flags may come from.
type SecretFile struct {
	// Path of the file in the container: absolute, without . or ..
	// segments, not under /tmp.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/[A-Za-z0-9_@+][-A-Za-z0-9_.@+]*)+$`
	// +kubebuilder:validation:XValidation:rule="self != '/tmp' && !self.startsWith('/tmp/')",message="a secret file must not be in /tmp, where the writable emptyDir is mounted"
	Path string `json:"path"`
	// Secret is the organiser's Secret and key holding the content: UTF-8
	// text, at most 64 KiB.
	Secret SecretKeyRef `json:"secret"`
	// Mode of the file, 0444 (292) when unset; it belongs to root, and a
	// mode without the group's read bit keeps it root's alone, as the
	// flag's fileMode does.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	// +optional
	Mode *int32 `json:"mode,omitempty"`
}

// PortExposure exposes one more port of a workload by a route or an
// Ingress of its own, on a host of its own under --ingress-domain: HTTP by
// host on one port, TLS-routed TCP on another. The workload's first port
// keeps its workload's exposure.
// Its address is in <WORKLOAD>_<PORT>_PUBLIC_HOST, _URL and _PORT, which
// env values may use (CHALLENGE for the primary's ports:
// "$(CHALLENGE_NC_PUBLIC_HOST)").
// +kubebuilder:validation:XValidation:rule="!has(self.gateway) || self.type in ['HTTPRoute', 'TLSRoute']",message="gateway is for an HTTPRoute or a TLSRoute"
// +kubebuilder:validation:XValidation:rule="!has(self.ingressClassName) || self.type == 'Ingress'",message="ingressClassName is for an Ingress"
type PortExposure struct {
	// Port names one of the workload's TCP ports, not its first.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Port string `json:"port"`
	// Type is Ingress, HTTPRoute or TLSRoute (on the operator's --gateways).
	// +kubebuilder:validation:Enum=Ingress;HTTPRoute;TLSRoute
	Type ExposeType `json:"type"`
	// TLS serves it over HTTPS (Ingress, HTTPRoute), as expose.tls does.
	// +optional
	TLS *IngressTLS `json:"tls,omitempty"`
	// Gateway is the Gateway its TLSRoute or HTTPRoute attaches to: one of
	// the operator's --gateways, the first of them when unset, whatever the
	// workload's own exposure attaches to.
	// +optional
	Gateway *GatewayRef `json:"gateway,omitempty"`
	// IngressClassName selects its Ingress's controller (type Ingress): one
	// of the operator's --ingress-classes, or empty for the cluster's
	// default class.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`
}

// BareNames lets the workloads of an instance reach each other by their
// bare names, as compose services do ("db", "redis", "flag:8081"): every
// component answers to its name, the primary to Primary, from the
// instance's own pods only. Each pod's hostname is its workload's bare name
// under the instance's headless Service "<instance>---names", and its one
// extra DNS search domain is that Service's, so "db" resolves to the pods'
// own addresses (every replica's, published before they are ready), in
// the shared namespace or the instance's own;
// another instance's pods resolve their own peers, never these. The
// cluster DNS searches the pod's namespace first: a Service named exactly
// as a bare name in that namespace (a Challenge named "db" in a shared
// namespace) is found before the peer, so give instances names no compose
// service has.
type BareNames struct {
	// Primary is the primary workload's bare name: the compose service the
	// template was made from ("web", "app").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Primary string `json:"primary"`
}

// Container is a container's command line, probes, files and writable
// directories: the primary component's and every other component's.
type Container struct {
	// Command replaces the image's entrypoint, e.g. to run a kCTF image's
	// server without the privileged jail its entrypoint starts.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Command []Argument `json:"command,omitempty"`

	// Args replace the image's command arguments.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Args []Argument `json:"args,omitempty"`

	// WorkingDir is the container's working directory.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\p{Cc}\p{Zl}\p{Zp}]*$`
	// +optional
	WorkingDir string `json:"workingDir,omitempty"`

	// Probes tell when the container is ready, started and alive; without a
	// readiness probe, a TCP probe on its first TCP port (for the primary
	// component, values.readinessProbe).
	// +optional
	Probes *Probes `json:"probes,omitempty"`

	// Files are configuration files the template carries (an nginx.conf, a
	// jail's config, an init SQL script), mounted read-only into the
	// container at their paths.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(f, self.exists_one(g, g.path == f.path))",message="file paths must be unique"
	// +optional
	Files []File `json:"files,omitempty"`

	// Scratch are writable directories besides /tmp (a cache, an upload or
	// data directory), each an emptyDir with a size limit within the
	// operator's ephemeral-storage ceiling; a memory-backed one counts
	// against the container's memory.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(m, self.exists_one(n, n.path == m.path))",message="scratch paths must be unique"
	// +optional
	Scratch []ScratchMount `json:"scratch,omitempty"`

	// KeepImageTmp leaves the image's own /tmp in place (its files, and
	// read-only with a read-only root filesystem) instead of a writable
	// scratch directory over it.
	// +optional
	KeepImageTmp bool `json:"keepImageTmp,omitempty"`

	// MemoryTmp backs the writable /tmp with memory (tmpfs), counted
	// against the container's memory limit: for a challenge that writes
	// many small files, or must not leave them on the node's disk.
	// +optional
	MemoryTmp bool `json:"memoryTmp,omitempty"`

	// SecretFiles are the organiser's Secrets' keys mounted as files.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(f, self.exists_one(g, g.path == f.path))",message="secret file paths must be unique"
	// +optional
	SecretFiles []SecretFile `json:"secretFiles,omitempty"`
}
