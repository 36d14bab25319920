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
{{ include "challenge.selectorLabels" . }}
app.kubernetes.io/managed-by: Helm
ctf.challenge-operator.io/instance: {{ .Release.Name | quote }}
ctf.challenge-operator.io/instance-namespace: {{ .Release.Namespace | quote }}
ctf.challenge-operator.io/participant: {{ required "participant is required" .Values.participant | quote }}
ctf.challenge-operator.io/challenge: {{ default .Release.Name .Values.challenge | quote }}
{{- end }}

{{/* The Service type for an exposure type: an Ingress fronts a ClusterIP Service. */}}
{{- define "challenge.serviceType" -}}
{{- if eq .Values.expose.type "Ingress" }}ClusterIP{{ else }}{{ .Values.expose.type }}{{ end }}
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
