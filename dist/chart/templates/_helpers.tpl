{{/*
The prefix of every object's name, cluster-scoped ones included: the same
names as the kustomize install (challenge-operator-controller-manager, ...).
*/}}
{{- define "challenge-operator.prefix" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 28 | trimSuffix "-" -}}
{{- end }}

{{/* Labels of every object. */}}
{{- define "challenge-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
app.kubernetes.io/part-of: challenge-operator
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The operator's image (and the instancer's: it is the same binary). */}}
{{- define "challenge-operator.image" -}}
{{- $tag := .Values.image.tag | default (printf "v%s" .Chart.AppVersion) -}}
{{- if .Values.image.digest -}}
{{ printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else -}}
{{ printf "%s:%s" .Values.image.repository $tag }}
{{- end -}}
{{- end }}

{{/*
Command-line flags from a map of flag name to value (manager.flags,
instancer.flags): sorted by name, lists joined by commas, each quoted.
Numbers from a values file are float64 to Helm, which %v would print as
1e+06: toJson writes them as they were written.
*/}}
{{- define "challenge-operator.flags" -}}
{{- range $name, $value := . }}
{{- if kindIs "slice" $value }}
- {{ printf "--%s=%s" $name (join "," $value) | quote }}
{{- else if kindIs "float64" $value }}
- {{ printf "--%s=%s" $name (toJson $value) | quote }}
{{- else }}
- {{ printf "--%s=%v" $name $value | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The pod and container security of the operator's and the instancer's pods. */}}
{{- define "challenge-operator.podSecurityContext" -}}
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
{{- end }}
{{- define "challenge-operator.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/* The webhook's serving certificate Secret. */}}
{{- define "challenge-operator.webhookSecret" -}}
{{- if eq .Values.webhook.certificate.source "secret" -}}
{{ .Values.webhook.certificate.secretName }}
{{- else -}}
{{ include "challenge-operator.prefix" . }}-webhook-server-cert
{{- end -}}
{{- end }}
