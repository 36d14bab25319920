{{/* Labels that select the instance's pods. */}}
{{- define "challenge.selectorLabels" -}}
app.kubernetes.io/name: challenge
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end }}

{{/* Labels on every object of the instance: who it belongs to and what it is.
The post-render gate checks that every object carries exactly these.
managed-by is Helm's own value: Helm adopts live objects into a release only
with it, so a release record lost (deleted by hand) is re-installed over them. */}}
{{- define "challenge.labels" -}}
{{ include "challenge.labelsOf" (dict "root" . "participant" .Values.participant) }}
{{- end }}

{{/* challenge.labels for a participant ("root" is the chart's context). A
pooled instance's pods keep the participant they started with
(podParticipant) when a team claims it, since a pod's labels change only
with a new pod. */}}
{{- define "challenge.labelsOf" -}}
{{ include "challenge.selectorLabels" .root }}
app.kubernetes.io/managed-by: Helm
ctf.challenge-operator.io/instance: {{ .root.Release.Name | quote }}
ctf.challenge-operator.io/instance-namespace: {{ .root.Release.Namespace | quote }}
ctf.challenge-operator.io/participant: {{ required "participant is required" .participant | quote }}
ctf.challenge-operator.io/challenge: {{ default .root.Release.Name .root.Values.challenge | quote }}
{{- end }}

{{/* The Service type for a workload's expose values, quoted: an Ingress or a
route fronts a ClusterIP Service. */}}
{{- define "challenge.serviceType" -}}
{{- if has .type (list "Ingress" "TLSRoute" "HTTPRoute") }}{{ "ClusterIP" | quote }}{{ else }}{{ .type | quote }}{{ end }}
{{- end }}

{{/* Whether the instance has a host of its own: "true" or "". */}}
{{- define "challenge.hasHost" -}}
{{- if and (has .Values.expose.type (list "Ingress" "TLSRoute" "HTTPRoute")) .Values.expose.host }}true{{ end }}
{{- end }}

{{/* The namespace the instance's objects live in. */}}
{{- define "challenge.namespace" -}}
{{- if .Values.namespacePerInstance.enabled }}{{ required "namespacePerInstance.name is required" .Values.namespacePerInstance.name }}{{ else }}{{ .Release.Namespace }}{{ end }}
{{- end }}

{{/* Peers for "outside the cluster": every address of each family but the
internal ranges. An except must lie within its cidr, so each family's ranges
go to their own block; IPv6 is left out only if no IPv6 range is listed (the
operator always lists some). */}}
{{- define "challenge.outside" -}}
{{- $v4 := list }}{{- $v6 := list }}
{{- range .Values.networkPolicy.internalCIDRs }}
{{- if contains ":" . }}{{ $v6 = append $v6 . }}{{ else }}{{ $v4 = append $v4 . }}{{ end }}
{{- end }}
- ipBlock:
    cidr: 0.0.0.0/0
    except:
      {{- range $v4 }}
      - {{ . | quote }}
      {{- end }}
{{- if $v6 }}
- ipBlock:
    cidr: "::/0"
    except:
      {{- range $v6 }}
      - {{ . | quote }}
      {{- end }}
{{- end }}
{{- end }}

{{/* Labels that select one component's pods ("root" is the chart's context,
"c" the component's values): never the primary's, named "challenge". */}}
{{- define "challenge.componentSelectorLabels" -}}
app.kubernetes.io/name: {{ .c.name | quote }}
app.kubernetes.io/instance: {{ .root.Release.Name | quote }}
{{- end }}

{{/* Labels on every object of a component: the instance's identity, with
the component's name ("participant", when set, overrides the instance's). */}}
{{- define "challenge.componentLabels" -}}
{{ include "challenge.componentSelectorLabels" . }}
app.kubernetes.io/component: {{ .c.name | quote }}
app.kubernetes.io/managed-by: Helm
ctf.challenge-operator.io/instance: {{ .root.Release.Name | quote }}
ctf.challenge-operator.io/instance-namespace: {{ .root.Release.Namespace | quote }}
ctf.challenge-operator.io/participant: {{ required "participant is required" (default .root.Values.participant .participant) | quote }}
ctf.challenge-operator.io/challenge: {{ default .root.Release.Name .root.Values.challenge | quote }}
{{- end }}

{{/* The peer that is every pod of the instance, whatever its component, in
the NetworkPolicy's own namespace. */}}
{{- define "challenge.instancePeer" -}}
- podSelector:
    matchLabels:
      ctf.challenge-operator.io/instance: {{ .Release.Name | quote }}
{{- end }}

{{/* The instance's own address (challenge.hasHost), after a container's
other variables so that it wins: its host, and its URL when it serves HTTP. */}}
{{- define "challenge.hostEnv" -}}
- name: CHALLENGE_HOST
  value: {{ .Values.expose.host | quote }}
{{- if ne .Values.expose.type "TLSRoute" }}
- name: CHALLENGE_URL
  {{- $hostPort := .Values.expose.host }}
  {{- with .Values.expose.port }}{{ $hostPort = printf "%s:%d" $hostPort (int .) }}{{ end }}
  value: {{ printf "%s://%s/" (ternary "https" "http" (.Values.expose.https | default false)) $hostPort | quote }}
{{- end }}
{{- end }}

{{/* Where a component may connect ("root" is the chart's context, "internet"
whether it may reach the internet): the cluster DNS, the template's named
destinations and shared Services, the instance's other components, and the
internet if allowed. */}}
{{- define "challenge.egress" -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
  to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ .root.Values.networkPolicy.dnsNamespace | quote }}
      podSelector:
        matchLabels:
          k8s-app: kube-dns
{{- range .root.Values.networkPolicy.egress }}
- to:
    - ipBlock:
        cidr: {{ .cidr | quote }}
  {{- with .ports }}
  ports:
    {{- range . }}
    - port: {{ int .port }}
      protocol: {{ .protocol | default "TCP" | quote }}
    {{- end }}
  {{- end }}
{{- end }}
{{- range .root.Values.networkPolicy.sharedServices }}
# A Service of the organiser's: its pods, on its ports.
- to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ .namespace | quote }}
      podSelector:
        matchLabels:
          {{- range $k, $v := .selector }}
          {{ $k | quote }}: {{ $v | quote }}
          {{- end }}
  ports:
    {{- range .ports }}
    {{- if kindIs "string" .port }}
    - port: {{ .port | quote }}
    {{- else }}
    - port: {{ int .port }}
    {{- end }}
      protocol: {{ .protocol | quote }}
    {{- end }}
{{- end }}
{{- if .internet }}
- to:
    {{- include "challenge.outside" .root | trim | nindent 4 }}
{{- end }}
{{- if .root.Values.components }}
- to:
    {{- include "challenge.instancePeer" .root | nindent 4 }}
{{- end }}
{{- end }}

{{/* The Ingress of a workload exposed by one ("root" is the chart's
context, "name" its name, "service" the Service it leads to when not of
that name, "labels" its labels, "expose" and "ports" its values): its own
host, to its first port. */}}
{{- define "challenge.ingress" -}}
{{- if eq .expose.type "Ingress" }}
{{- $primary := first .ports }}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ .name | quote }}
  namespace: {{ include "challenge.namespace" .root | quote }}
  labels:
    {{- .labels | nindent 4 }}
  {{- with .expose.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with .expose.ingressClassName }}
  ingressClassName: {{ . | quote }}
  {{- end }}
  {{- if .expose.https }}
  tls:
    - hosts:
        - {{ .expose.host | quote }}
      {{- with (.expose.tls | default dict).secretName }}
      secretName: {{ . | quote }}
      {{- end }}
  {{- end }}
  rules:
    - host: {{ required "an Ingress needs the operator's --ingress-domain: each instance gets a host of its own under it" .expose.host | quote }}
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: {{ default .name .service | quote }}
                port:
                  name: {{ $primary.name | quote }}
{{- end }}
{{- end }}

{{/* The TLSRoute or HTTPRoute of a component exposed by one (the context
of challenge.ingress): its own host on a Gateway the operator's --gateways
list, raw TCP inside TLS routed by SNI (TLSRoute) or HTTP (HTTPRoute), to its
first port. */}}
{{- define "challenge.route" -}}
{{- if has .expose.type (list "TLSRoute" "HTTPRoute") }}
{{- $primary := first .ports }}
apiVersion: gateway.networking.k8s.io/v1
{{- if eq .expose.type "TLSRoute" }}
kind: TLSRoute
{{- else }}
kind: HTTPRoute
{{- end }}
metadata:
  name: {{ .name | quote }}
  namespace: {{ include "challenge.namespace" .root | quote }}
  labels:
    {{- .labels | nindent 4 }}
  {{- with .expose.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  parentRefs:
    - group: gateway.networking.k8s.io
      kind: Gateway
      namespace: {{ required "a route needs the operator's --gateways" .expose.gateway.namespace | quote }}
      name: {{ .expose.gateway.name | quote }}
  hostnames:
    - {{ required "a route needs the operator's --ingress-domain: each instance gets a host of its own under it" .expose.host | quote }}
  rules:
    - backendRefs:
        - name: {{ default .name .service | quote }}
          port: {{ int $primary.port }}
{{- end }}
{{- end }}
