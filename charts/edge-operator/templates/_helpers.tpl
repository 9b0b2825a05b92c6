{{- define "edge-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "edge-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
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
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- /* Where a Pod of the release may run: `own` is its component's values (`emulator`,
`tests`; none for the operator), and each of nodeSelector, tolerations and affinity it
leaves unset (null) is the top-level value. An empty one of its own is kept: none. */ -}}
{{- define "edge-operator.scheduling" -}}
{{- $own := .own | default dict -}}
{{- range $key := list "nodeSelector" "tolerations" "affinity" -}}
{{- $value := index $.root.Values $key -}}
{{- if not (kindIs "invalid" (index $own $key)) -}}
{{- $value = index $own $key -}}
{{- end -}}
{{- with $value }}
{{ $key }}:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* The operator's update strategy. A Pod without leader election holds no Lease, so a
Pod started beside it would lead at once and both would act; the chart cannot see the
running Pods, so it never starts a Pod beside one that may not elect. One replica (the
only way the chart runs without leader election): Recreate, which starts the new Pod
once the old one is gone, and a `strategy` other than Recreate fails the render. More
replicas always elect: `strategy`, else a rolling update of one surged Pod at a time. */ -}}
{{- define "edge-operator.strategy" -}}
{{- $strategy := .Values.strategy | default dict -}}
{{- $type := $strategy.type | default (ternary "RollingUpdate" "" (hasKey $strategy "rollingUpdate")) -}}
{{- if and (eq $type "Recreate") $strategy.rollingUpdate -}}
{{- fail "strategy.rollingUpdate is for type RollingUpdate, not Recreate" -}}
{{- end -}}
{{- if and (le (int .Values.replicas) 1) (not (has $type (list "" "Recreate"))) -}}
{{- fail (printf "strategy %s with one replica: the operator is replaced with Recreate, so that two operators never act at once (a Pod without leader election holds no Lease, and the chart cannot see whether the running one elects). Leave strategy empty, or set replicas above 1 for a rolling update" (toJson $strategy)) -}}
{{- end -}}
{{- if or (le (int .Values.replicas) 1) (eq $type "Recreate") -}}
type: Recreate
rollingUpdate: null
{{- else if $strategy -}}
type: RollingUpdate
{{- with $strategy.rollingUpdate }}
rollingUpdate:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- else -}}
type: RollingUpdate
rollingUpdate:
  maxSurge: 1
  maxUnavailable: 0
{{- end -}}
{{- end -}}

{{- define "edge-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "edge-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else if .Values.serviceAccount.name -}}
{{- .Values.serviceAccount.name -}}
{{- else -}}
{{- fail "serviceAccount.create=false needs serviceAccount.name: the operator's grants must not go to the namespace's default ServiceAccount" -}}
{{- end -}}
{{- end -}}

{{- /* The namespaces whose Secrets the operator reads, comma-separated ("*": all). */ -}}
{{- define "edge-operator.secretNamespaces" -}}
{{- if .Values.secretAccess.allNamespaces -}}
*
{{- else if .Values.secretAccess.namespaces -}}
{{- join "," .Values.secretAccess.namespaces -}}
{{- else -}}
{{- .Values.watchNamespace -}}
{{- end -}}
{{- end -}}

{{/* The in-use finalizer the operator puts on Secrets: a shard's own when it watches
by label (its --lease-name is the fullname), as `edge-operator run` derives it. */}}
{{- define "edge-operator.secretFinalizer" -}}
{{- if .Values.watchLabelSelector -}}
{{ include "edge-operator.fullname" . }}.shard.edgeplatform.io/credentials-in-use
{{- else -}}
edgeplatform.io/credentials-in-use
{{- end -}}
{{- end }}

{{- define "edge-operator.secretRules" -}}
- apiGroups: [""]
  resources: ["secrets"]
  # list/watch: the metadata of Secrets, to see a referenced Secret change; get: the
  # data of a referenced Secret, when its resourceVersion changed.
  {{- if .Values.secretAccess.inUseProtection }}
  # patch: the in-use finalizer of Secrets that restoring objects need.
  verbs: ["get", "list", "watch", "patch"]
  {{- else }}
  verbs: ["get", "list", "watch"]
  {{- end }}
{{- end -}}

{{- define "edge-operator.credentialsSecret" -}}
{{- if or .Values.credentials.create (include "edge-operator.emulatorCredentials" .) -}}
{{- printf "%s-credentials" (include "edge-operator.fullname" .) -}}
{{- else -}}
{{- .Values.credentials.existingSecret -}}
{{- end -}}
{{- end -}}

{{- /* The emulator's access key is the default key when no credentials are configured. */ -}}
{{- define "edge-operator.emulatorCredentials" -}}
{{- if and .Values.emulator.enabled (not .Values.credentials.create) (not .Values.credentials.existingSecret) -}}true{{- end -}}
{{- end -}}

{{- define "edge-operator.emulatorName" -}}
{{- printf "%s-emulator" (include "edge-operator.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "edge-operator.emulatorSelectorLabels" -}}
app.kubernetes.io/name: edge-sim
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- /*
The platform API URL: platform.apiUrl, or the emulator's Service. Its address comes from
the Service's environment variables, which Kubernetes expands in container arguments:
this needs no cluster DNS.
*/ -}}
{{- define "edge-operator.apiUrl" -}}
{{- if .Values.platform.apiUrl -}}
{{- .Values.platform.apiUrl -}}
{{- else if and .Values.emulator.enabled .Values.emulator.tls.enabled -}}
{{- printf "https://%s:%v" (include "edge-operator.emulatorHost" .) .Values.emulator.port -}}
{{- else if .Values.emulator.enabled -}}
{{- $service := include "edge-operator.emulatorName" . | upper | replace "-" "_" -}}
{{- printf "http://$(%s_SERVICE_HOST):$(%s_SERVICE_PORT)" $service $service -}}
{{- end -}}
{{- end -}}

{{- /* The operator talks to the in-cluster emulator: platform.apiUrl is empty. */ -}}
{{- define "edge-operator.usesEmulator" -}}
{{- if and .Values.emulator.enabled (not .Values.platform.apiUrl) -}}true{{- end -}}
{{- end -}}

{{- /* The emulator's Service name that its certificate holds and the operator uses. */ -}}
{{- define "edge-operator.emulatorHost" -}}
{{- printf "%s.%s.svc" (include "edge-operator.emulatorName" .) .Release.Namespace -}}
{{- end -}}

{{- /*
The volume source of the CAs the operator trusts besides the image's, as YAML, or
nothing: platform.tls's bundle, ConfigMap or Secret, else the emulator's CA when the
operator talks to the emulator over https.
*/ -}}
{{- define "edge-operator.caVolume" -}}
{{- $tls := .Values.platform.tls -}}
{{- if $tls.caBundle -}}
configMap: {name: {{ printf "%s-ca" (include "edge-operator.fullname" .) }}, items: [{key: ca.crt, path: ca.crt}]}
{{- else if $tls.existingConfigMap -}}
configMap: {name: {{ $tls.existingConfigMap }}, items: [{key: {{ $tls.key }}, path: ca.crt}]}
{{- else if $tls.existingSecret -}}
secret: {secretName: {{ $tls.existingSecret }}, items: [{key: {{ $tls.key }}, path: ca.crt}]}
{{- else if and (include "edge-operator.usesEmulator" .) .Values.emulator.tls.enabled -}}
secret: {secretName: {{ include "edge-operator.emulatorTlsSecret" . }}, items: [{key: ca.crt, path: ca.crt}]}
{{- end -}}
{{- end -}}

{{- /* The Secret of the emulator's CA and certificate: one given, or the chart's. */ -}}
{{- define "edge-operator.emulatorTlsSecret" -}}
{{- .Values.emulator.tls.existingSecret | default (printf "%s-tls" (include "edge-operator.emulatorName" .)) -}}
{{- end -}}

{{- define "edge-operator.leaderElection" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicas) 1) -}}true{{- end -}}
{{- end -}}

{{- /* The kinds and their resources: "edge-operator.kinds" of _kinds.tpl. */ -}}
{{- define "edge-operator.kindResources" -}}
{{- values (include "edge-operator.kinds" . | fromJson) | sortAlpha | toJson -}}
{{- end -}}

{{- /* Rules the operator needs on its custom resources and Events. */ -}}
{{- define "edge-operator.watchRules" -}}
{{- $resources := include "edge-operator.kindResources" . | fromJsonArray -}}
{{- $statuses := list -}}
{{- range $resources }}{{ $statuses = append $statuses (printf "%s/status" .) }}{{ end -}}
- apiGroups: ["edgeplatform.io"]
  resources: {{ $resources | toJson }}
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["edgeplatform.io"]
  resources: {{ $statuses | toJson }}
  verbs: ["get", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{- /* An image reference: by digest when one is given, else by tag (the chart's appVersion by default). Call with (dict "image" .Values.image "appVersion" .Chart.AppVersion). */}}
{{- define "edge-operator.image" -}}
{{- if .image.digest -}}
{{ .image.repository }}@{{ .image.digest }}
{{- else -}}
{{ .image.repository }}:{{ default .appVersion .image.tag }}
{{- end -}}
{{- end -}}
