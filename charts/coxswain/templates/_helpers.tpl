{{/* The chart label Helm charts carry. */}}
{{- define "coxswain.chart" -}}
{{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The controller image. */}}
{{- define "coxswain.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default (printf "v%s" .Chart.AppVersion) }}
{{- end }}

{{/* Arguments the chart owns; config/manager's own arguments with these
     flags are replaced. */}}
{{- define "coxswain.ownedFlags" -}}
--leader-elect --metrics-bind-address --zap-log-level --admin-bind-address --admin-cert-dir --shared-proxy-tracing-otlp-endpoint --shared-proxy-tracing-otlp-insecure --shared-proxy-tracing-sampling-ratio
{{- end }}

{{/* Environment variables the chart owns; config/manager's own values for
     them are replaced. */}}
{{- define "coxswain.ownedEnv" -}}
COXSWAIN_PROXY_IMAGE COXSWAIN_DISCOVERY_CA_MODE COXSWAIN_SHARED_PROXY_REPLICAS COXSWAIN_SHARED_PROXY_RATE_LIMIT_REDIS
{{- end }}

{{/* Labels of the monitoring objects: the chart's, then the user's extra
     labels (e.g. the release label a Prometheus selects by). Takes
     (list $ extraLabels). */}}
{{- define "coxswain.monitoringLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: coxswain
app.kubernetes.io/part-of: coxswain
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
helm.sh/chart: {{ include "coxswain.chart" $root }}
{{- with index . 1 }}
{{ toYaml . }}
{{- end }}
{{- end }}
