{{- define "edge-operator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "edge-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "edge-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "edge-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "edge-operator.labels" -}}
{{ include "edge-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "edge-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "edge-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "edge-operator.credentialsSecret" -}}
{{- if .Values.credentials.create -}}
{{- printf "%s-credentials" (include "edge-operator.fullname" .) -}}
{{- else -}}
{{- .Values.credentials.existingSecret -}}
{{- end -}}
{{- end -}}

{{- define "edge-operator.leaderElection" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicas) 1) -}}true{{- end -}}
{{- end -}}

{{- /* Rules the operator needs on its custom resources, Secrets and Events. */ -}}
{{- define "edge-operator.watchRules" -}}
- apiGroups: ["edgeplatform.io"]
  resources: ["accesslistconfigs", "pullzonecertificates", "containerappwatches"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["edgeplatform.io"]
  resources: ["accesslistconfigs/status", "pullzonecertificates/status", "containerappwatches/status"]
  verbs: ["get", "patch"]
- apiGroups: [""]
  resources: ["secrets"]
  # list/watch are metadata-only requests; get reads a referenced Secret by name; patch
  # adds and removes the in-use finalizer of Secrets that restoring objects need.
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}
