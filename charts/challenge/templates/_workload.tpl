{{- /* The objects of one workload of the instance, its primary one or a
component (challenge.workloads): one template of each kind for both. Where
the primary's text and the components' always differed (a YAML comment, a
key the primary always wrote), it still does: the Helm reconciler upgrades
every instance whose rendered manifest changes by one byte. */}}

{{/* The instance's workloads, its primary one first and then its components,
each one dict of the same keys (the components' are set by the operator from
the template; the primary's are the top-level values, where a Challenge's
values override them, since the platform addresses them there). Written into
.into.list ("root" is the chart's context): a template returns only text. */}}
{{- define "challenge.workloads" -}}
{{- $v := .root.Values }}
{{- $primary := dict "primary" true "name" "challenge" "objectName" .root.Release.Name "image" $v.image "replicas" $v.replicas
  "podLabels" $v.podLabels "podAnnotations" $v.podAnnotations "command" $v.command "args" $v.args "workingDir" $v.workingDir
  "ports" $v.ports "hosts" $v.hosts "env" $v.env "lateEnv" $v.lateEnv "addresses" $v.addresses "secretEnv" $v.secretEnv "flag" $v.flag
  "probes" $v.probes "readinessProbe" $v.readinessProbe "resources" $v.resources "security" $v.security
  "readOnlyRootFilesystem" $v.readOnlyRootFilesystem "mountTmp" $v.mountTmp "scratch" $v.scratch "files" $v.files
  "secretFiles" $v.secretFiles "memoryTmp" $v.memoryTmp
  "expose" $v.expose "exposePorts" $v.exposePorts "internetEgress" $v.networkPolicy.allowInternetEgress "sidecars" $v.sidecars "bareName" $v.bareNames.primary }}
{{- with $v.flagDirs }}{{ $_ := set $primary "flagDirs" . }}{{ end }}
{{- $_ := set .into "list" (prepend $v.components $primary) }}
{{- end }}

{{/* Labels on every object of a workload ("root" is the chart's context,
"w" the workload; "participant", when set, overrides the instance's). */}}
{{- define "challenge.workloadLabels" -}}
{{- if .w.primary }}
{{- include "challenge.labelsOf" (dict "root" .root "participant" (default .root.Values.participant .participant)) }}
{{- else }}
{{- include "challenge.componentLabels" (dict "root" .root "c" .w "participant" .participant) }}
{{- end }}
{{- end }}

{{/* Labels that select one workload's pods (the context of
challenge.workloadLabels). */}}
{{- define "challenge.workloadSelector" -}}
{{- if .w.primary }}
{{- include "challenge.selectorLabels" .root }}
{{- else }}
{{- include "challenge.componentSelectorLabels" (dict "root" .root "c" .w) }}
{{- end }}
{{- end }}

{{/* A workload's container name, its own: the primary's is written bare,
as it always was, since the Helm reconciler upgrades an instance whose
rendered manifest changes by a single byte. */}}
{{- define "challenge.containerName" -}}
{{- if .primary }}challenge{{ else }}{{ .name | quote }}{{ end }}
{{- end }}

{{/* Whether a workload is reached from outside its instance: "true" or "".
The primary always is (its Service type only says how); a component is when
its first port is, or another (exposePorts). */}}
{{- define "challenge.exposed" -}}
{{- if or .primary (ne .expose.type "ClusterIP") (dig "exposePorts" list .) }}true{{ end }}
{{- end }}

{{/* A workload's Deployment ("root" is the chart's context, "w" the
workload). */}}
{{- define "challenge.deployment" -}}
{{- $root := .root }}{{ $w := .w }}
{{- $participant := default $root.Values.participant $root.Values.podParticipant }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $w.objectName | quote }}
  namespace: {{ include "challenge.namespace" $root | quote }}
  labels:
    {{- include "challenge.workloadLabels" (dict "root" $root "w" $w) | nindent 4 }}
spec:
  replicas: {{ int (dig "replicas" 1 $w) }}
  revisionHistoryLimit: 1
  selector:
    matchLabels:
      {{- include "challenge.workloadSelector" (dict "root" $root "w" $w) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "challenge.workloadLabels" (dict "root" $root "w" $w "participant" $participant) | nindent 8 }}
        {{- with (dig "podLabels" dict $w) }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with (dig "podAnnotations" dict $w) }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ $root.Release.Name | quote }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . | quote }}
        {{- end }}
      {{- end }}
      {{- with $w.bareName }}
      # Its bare name: its pods are "<bareName>.<bareNames.service>", which the
      # instance's own search domain resolves as "<bareName>".
      hostname: {{ . | quote }}
      subdomain: {{ $root.Values.bareNames.service | quote }}
      dnsConfig:
        searches:
          - {{ $root.Values.bareNames.search | quote }}
      {{- end }}
      {{- with $w.security.runtimeClassName }}
      runtimeClassName: {{ . | quote }}
      {{- end }}
      {{- with $w.security.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $w.security.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $w.primary }}
      # The operator's, from the template's security section within its flags; the
      # policy gate requires exactly these.
      {{- end }}
      {{- if not (and $w.security.pod $w.security.container) }}
      {{- fail "security.pod and security.container are set by the operator, for every workload" }}
      {{- end }}
      securityContext:
        {{- toYaml $w.security.pod | nindent 8 }}
      containers:
        {{- include "challenge.container" (dict "root" $root "w" $w "c" $w "prefix" "") | nindent 8 }}
        {{- range $s := (dig "sidecars" list $w) }}
        {{- include "challenge.container" (dict "root" $root "w" $w "c" $s "prefix" (printf "%s-" $s.name)) | nindent 8 }}
        {{- end }}
      {{- $flag := dig "flag" dict $w }}
      {{- $flagFile := and $flag.enabled (ne $flag.mount "Env") }}
      {{- if or $w.primary $w.mountTmp $w.scratch $w.files $flagFile $w.secretFiles (dig "sidecars" list $w) }}
      volumes:
        {{- with include "challenge.containerVolumes" (dict "root" $root "c" $w "prefix" "") | trim }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- range $s := (dig "sidecars" list $w) }}
        {{- with include "challenge.containerVolumes" (dict "root" $root "c" $s "prefix" (printf "%s-" $s.name)) | trim }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- end }}
      {{- end }}
{{- end }}

{{/* The ports of a workload's pod, written into .into.list ("w" the
workload): its main container's, then each sidecar's (a proxy's public
port), which its Service and NetworkPolicy admit alike. */}}
{{- define "challenge.podPorts" -}}
{{- $ports := .w.ports }}
{{- range (dig "sidecars" list .w) }}
{{- $ports = concat $ports .ports }}
{{- end }}
{{- $_ := set .into "list" $ports }}
{{- end }}

{{/* One container of a workload's pod ("root" is the chart's context, "w"
the workload, "c" the container's values: the workload's own for its main
container; "prefix" starts the names of its volumes, "" for the main
container), as an item of the pod's containers. */}}
{{- define "challenge.container" -}}
{{- $root := .root }}{{ $w := .w }}{{ $c := .c }}{{ $prefix := .prefix -}}
- name: {{ include "challenge.containerName" $c }}
  image: {{ required "every workload needs an image" $c.image | quote }}
  imagePullPolicy: {{ $root.Values.imagePullPolicy | quote }}
  {{- with $c.command }}
  command:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.args }}
  args:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.workingDir }}
  workingDir: {{ . | quote }}
  {{- end }}
  {{- with $c.ports }}
  ports:
    {{- range . }}
    - name: {{ .name | quote }}
      containerPort: {{ int .port }}
      protocol: {{ .protocol | default "TCP" | quote }}
    {{- end }}
  {{- end }}
  {{- $flag := dig "flag" dict $c }}
  {{- $secretEnv := dig "secretEnv" list $c }}
  {{- $hosts := dig "hosts" list $c }}
  {{- $flagEnv := and $flag.enabled (eq $flag.mount "Env") }}
  {{- $hostEnv := include "challenge.hasHost" $root }}
  {{- $lateEnv := dig "lateEnv" list $c }}
  {{- $addresses := dig "addresses" list $c }}
  {{- if or $hosts $c.env $flagEnv $hostEnv $secretEnv $lateEnv }}
  env:
    {{- /* The components' host names first, so that the values' env may use them. */}}
    {{- range $hosts }}
    - name: {{ .name | quote }}
      value: {{ .value | quote }}
    {{- end }}
    {{- range $c.env }}
    - name: {{ .name | quote }}
      value: {{ .value | default "" | quote }}
    {{- end }}
    {{- range $secretEnv }}
    - name: {{ .name | quote }}
      valueFrom:
        secretKeyRef:
          name: {{ $flag.secretName | quote }}
          key: {{ required "every secretEnv entry needs its Secret key" .key | quote }}
    {{- end }}
    {{- if $hostEnv }}
    {{- include "challenge.hostEnv" $root | nindent 4 }}
    {{- end }}
    {{- /* The variables that use an address, after the addresses they use. */}}
    {{- range $addresses }}
    - name: {{ .name | quote }}
      value: {{ .value | quote }}
    {{- end }}
    {{- range $lateEnv }}
    - name: {{ .name | quote }}
      value: {{ .value | default "" | quote }}
    {{- end }}
    {{- if $flagEnv }}
    - name: {{ required "flag.envName is required" $flag.envName | quote }}
      valueFrom:
        secretKeyRef:
          name: {{ $flag.secretName | quote }}
          key: flag
    {{- end }}
  {{- end }}
  {{- $defaultReadiness := dig "readinessProbe" dict $c }}
  {{- $first := dict }}
  {{- with $c.ports }}{{ $first = first . }}{{ end }}
  {{- if $c.probes.readiness }}
  readinessProbe:
    {{- toYaml $c.probes.readiness | nindent 4 }}
  {{- else if and $defaultReadiness.enabled $first (eq ($first.protocol | default "TCP") "TCP") }}
  readinessProbe:
    tcpSocket:
      port: {{ $first.name | quote }}
    periodSeconds: {{ int $defaultReadiness.periodSeconds }}
  {{- end }}
  {{- with $c.probes.startup }}
  startupProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.probes.liveness }}
  livenessProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  resources:
    {{- toYaml $c.resources | nindent 4 }}
  securityContext:
    {{- toYaml $w.security.container | nindent 4 }}
    readOnlyRootFilesystem: {{ $c.readOnlyRootFilesystem | toYaml }}
  {{- $flagFile := and $flag.enabled (ne $flag.mount "Env") }}
  {{- $flagDirs := dig "flagDirs" list $c }}
  {{- if or $c.primary $c.mountTmp $c.scratch $c.files $flagFile $c.secretFiles $flagDirs }}
  volumeMounts:
    {{- if $c.mountTmp }}
    - name: {{ include "challenge.volumeName" (list $prefix "tmp") }}
      mountPath: /tmp
    {{- end }}
    {{- range $i, $s := $c.scratch }}
    - name: {{ printf "%sscratch-%d" $prefix $i | quote }}
      mountPath: {{ $s.path | quote }}
    {{- end }}
    {{- range $c.files }}
    - name: {{ include "challenge.volumeName" (list $prefix "files") }}
      mountPath: {{ .path | quote }}
      subPath: {{ .key | quote }}
      readOnly: true
    {{- end }}
    {{- if $flagFile }}
    - name: {{ include "challenge.volumeName" (list $prefix "flag") }}
      mountPath: {{ $flag.path | quote }}
      subPath: flag
      readOnly: true
    {{- end }}
    {{- range $c.secretFiles }}
    - name: {{ include "challenge.volumeName" (list $prefix "secrets") }}
      mountPath: {{ .path | quote }}
      subPath: {{ .key | quote }}
      readOnly: true
    {{- end }}
    {{- /* A perTeam flag of a pooled instance: its directory, which the
    operator fills when a team claims the instance. */}}
    {{- range $flagDirs }}
    - name: {{ .volume | quote }}
      mountPath: {{ .path | quote }}
      readOnly: true
    {{- end }}
  {{- end }}
{{- end }}

{{/* The volumes of one container (challenge.container's context), as items
of the pod's volumes. */}}
{{- define "challenge.containerVolumes" -}}
{{- $root := .root }}{{ $c := .c }}{{ $prefix := .prefix }}
{{- $flag := dig "flag" dict $c }}
{{- $flagFile := and $flag.enabled (ne $flag.mount "Env") }}
{{- if $c.mountTmp }}
- name: {{ include "challenge.volumeName" (list $prefix "tmp") }}
  emptyDir:
    sizeLimit: {{ $root.Values.tmpSizeLimit | quote }}
    {{- if $c.memoryTmp }}
    medium: "Memory"
    {{- end }}
{{- end }}
{{- range $i, $s := $c.scratch }}
- name: {{ printf "%sscratch-%d" $prefix $i | quote }}
  emptyDir:
    sizeLimit: {{ $s.sizeLimit | quote }}
    {{- with $s.medium }}
    medium: {{ . | quote }}
    {{- end }}
{{- end }}
{{- with $c.files }}
- name: {{ include "challenge.volumeName" (list $prefix "files") }}
  configMap:
    name: {{ printf "%s-files" $root.Release.Name | quote }}
    items:
      {{- range . }}
      - key: {{ .key | quote }}
        path: {{ .key | quote }}
        mode: {{ int .mode }}
      {{- end }}
{{- end }}
{{- if $flagFile }}
- name: {{ include "challenge.volumeName" (list $prefix "flag") }}
  secret:
    secretName: {{ $flag.secretName | quote }}
    defaultMode: {{ int $flag.fileMode }}
{{- end }}
{{- range (dig "flagDirs" list $c) }}
- name: {{ .volume | quote }}
  emptyDir:
    medium: "Memory"
    sizeLimit: "1Mi"
{{- end }}
{{- with $c.secretFiles }}
- name: {{ include "challenge.volumeName" (list $prefix "secrets") }}
  secret:
    secretName: {{ required "secret files need the instance's Secret" $flag.secretName | quote }}
    items:
      {{- range . }}
      - key: {{ .key | quote }}
        path: {{ .key | quote }}
        mode: {{ int .mode }}
      {{- end }}
{{- end }}
{{- end }}

{{/* A volume's name: a container's prefix (its name and a dash, a DNS label
that starts with a letter: a plain scalar) and the volume's own; the main
container's are written bare, as they always were. */}}
{{- define "challenge.volumeName" -}}
{{- $prefix := index . 0 }}{{ $name := index . 1 }}
{{- if $prefix }}{{ printf "%s%s" $prefix $name | quote }}{{ else }}{{ $name }}{{ end }}
{{- end }}

{{/* A workload's Service, when it has ports (a bot nothing connects to has
none); the context of challenge.deployment. */}}
{{- define "challenge.service" -}}
{{- $root := .root }}{{ $w := .w }}
{{- $podPorts := dict }}
{{- include "challenge.podPorts" (dict "w" $w "into" $podPorts) }}
{{- if $podPorts.list }}
apiVersion: v1
kind: Service
metadata:
  name: {{ $w.objectName | quote }}
  namespace: {{ include "challenge.namespace" $root | quote }}
  labels:
    {{- include "challenge.workloadLabels" (dict "root" $root "w" $w) | nindent 4 }}
  {{- with $w.expose.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ include "challenge.serviceType" $w.expose }}
  selector:
    {{- include "challenge.workloadSelector" (dict "root" $root "w" $w) | nindent 4 }}
  ports:
    {{- range $podPorts.list }}
    - name: {{ .name | quote }}
      port: {{ int .port }}
      targetPort: {{ .name | quote }}
      protocol: {{ .protocol | default "TCP" | quote }}
    {{- end }}
{{- end }}
{{- end }}

{{/* A workload's NetworkPolicy: only the instance's own pods connect to it,
on its ports ("peers": when the instance has more than one workload), and
the outside with the organiser's namespaces too when it is exposed; it may
resolve DNS and reach what challenge.egress lets it, never the cluster's
internal ranges. The context of challenge.deployment, and "peers". */}}
{{- define "challenge.networkPolicy" -}}
{{- $root := .root }}{{ $w := .w }}{{ $peers := .peers }}
{{- $exposed := include "challenge.exposed" $w }}
{{- $podPorts := dict }}
{{- include "challenge.podPorts" (dict "w" $w "into" $podPorts) }}
{{- if $w.primary }}
# Isolation: the instance accepts connections on its ports from outside the
# cluster and from the namespaces the organiser names (an ingress controller's,
# the platform's), never from another instance; it may resolve DNS and reach
# its template's named destinations, its other components and, only if
# allowed, the internet, never the cluster's internal ranges.
{{- else }}
# Isolation: only the instance's own pods connect, on the component's ports;
# it may resolve DNS, reach the instance's other components, its template's
# named destinations and, only if allowed, the internet.
{{- end }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ $w.objectName | quote }}
  namespace: {{ include "challenge.namespace" $root | quote }}
  labels:
    {{- include "challenge.workloadLabels" (dict "root" $root "w" $w) | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "challenge.workloadSelector" (dict "root" $root "w" $w) | nindent 6 }}
  policyTypes: ["Ingress", "Egress"]
  {{- if $podPorts.list }}
  ingress:
    {{- if $exposed }}
    {{- if not $w.primary }}
    # Exposed: from outside the cluster and the organiser's namespaces too.
    {{- end }}
    - ports:
        {{- range $podPorts.list }}
        - port: {{ int .port }}
          protocol: {{ .protocol | default "TCP" | quote }}
        {{- end }}
      from:
        {{- include "challenge.outside" $root | trim | nindent 8 }}
        {{- range $root.Values.networkPolicy.ingressFromNamespaces }}
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: {{ . | quote }}
        {{- end }}
    {{- end }}
    {{- if and $w.primary $root.Values.networkPolicy.fromInstances }}
    # Shared by every team: every team's instances reach it too, on its ports.
    - ports:
        {{- range $podPorts.list }}
        - port: {{ int .port }}
          protocol: {{ .protocol | default "TCP" | quote }}
        {{- end }}
      from:
        - namespaceSelector: {}
          podSelector:
            matchExpressions:
              - key: ctf.challenge-operator.io/instance
                operator: Exists
    {{- end }}
    {{- if $peers }}
    {{- if $w.primary }}
    # The instance's components, on the same ports.
    {{- end }}
    - ports:
        {{- range $podPorts.list }}
        - port: {{ int .port }}
          protocol: {{ .protocol | default "TCP" | quote }}
        {{- end }}
      from:
        {{- include "challenge.instancePeer" $root | nindent 8 }}
    {{- end }}
  {{- else }}
  ingress: []
  {{- end }}
  egress:
    {{- include "challenge.egress" (dict "root" $root "internet" $w.internetEgress) | nindent 4 }}
{{- end }}

{{/* A workload's Ingress or route ("kind": ingress or route), when its
exposure is one, to its first port; then one for each of its exposePorts of
that kind, named "<its objects' name>.<port>", to that port (the context of
challenge.deployment, and "kind"). */}}
{{- define "challenge.exposure" -}}
{{- $labels := include "challenge.workloadLabels" . }}
{{- $ctx := dict "root" .root "name" .w.objectName "labels" $labels "expose" .w.expose "ports" .w.ports }}
{{- with include (printf "challenge.%s" .kind) $ctx }}
---
{{- . | nindent 0 }}
{{- end }}
{{- range $e := dig "exposePorts" list .w }}
{{- $port := dict }}
{{- range $.w.ports }}{{ if eq .name $e.port }}{{ $port = . }}{{ end }}{{ end }}
{{- $ctx := dict "root" $.root "name" (printf "%s.%s" $.w.objectName $e.port) "service" $.w.objectName "labels" $labels "expose" $e.expose "ports" (list $port) }}
{{- with include (printf "challenge.%s" $.kind) $ctx }}
---
{{- . | nindent 0 }}
{{- end }}
{{- end }}
{{- end }}
