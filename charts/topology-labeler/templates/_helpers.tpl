{{/*
The prefix of every object's name: fullnameOverride, else the release name, followed by the
chart's name unless it already contains it. Release "topology-labeler" gives the names of
manifests/. Kept short enough for the longest suffix ("-grafana-dashboard").
*/}}
{{- define "topology-labeler.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end }}

{{/* The labels Helm's conventions add to every object (never to selectors or pods). */}}
{{- define "topology-labeler.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The image reference: repository@digest when a digest is set, else repository:tag. */}}
{{- define "topology-labeler.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end }}

{{/* Where the agent and the exporter read a custom profile file. */}}
{{- define "topology-labeler.profileDir" -}}/etc/topology-labeler/profile{{- end }}

{{/*
Everything that follows from `profile`, as YAML (read with fromYaml):
  shape       host (hostNetwork, for a metadata service) or ascend (privileged, NPU driver)
  name        the agent's object names; nameLabel its app.kubernetes.io/name
  profileArg  what --profile says, for the agent and the exporter
  ownLabels   the label keys the admission policy lets the agent write
  ownAnnotations  the annotations it lets the agent write
  args        the agent's command line
*/}}
{{- define "topology-labeler.agent" -}}
{{- $profile := .Values.profile -}}
{{- $settings := index .Values.profiles $profile -}}
{{- $shape := "host" -}}
{{- if or (eq $profile "ascend") (and (eq $profile "custom") (eq $settings.runsLike "ascend")) -}}
{{- $shape = "ascend" -}}
{{- end -}}
{{- $builtin := dict
  "oci" (list "oci-rdma" (list
    "oci.oraclecloud.com/rdma.hpc_island_id"
    "oci.oraclecloud.com/rdma.network_block_id"
    "oci.oraclecloud.com/rdma.local_block_id"
    "oci.oraclecloud.com/rdma.host_id"
    "oci.oraclecloud.com/host.gpu_memory_fabric_id"
    "oci.oraclecloud.com/host.gpu_memory_cluster_id"
    "oci.oraclecloud.com/rdma.planes"
    "oci.oraclecloud.com/rdma.ipv6"
    "oci.oraclecloud.com/host.tray_index"))
  "ascend" (list "ascend-superpod" (list
    "huawei.com/topotree"
    "huawei.com/topotree.superpodid"
    "huawei.com/topotree.rackid"
    "huawei.com/topotree.serverid"))
  "gce" (list "gce" (list
    "cloud.google.com/gce-topology-block"
    "cloud.google.com/gce-topology-subblock"
    "cloud.google.com/gce-topology-host"))
  "azure" (list "azure" (list
    "topology.kubernetes.azure.com/interconnect-group"
    "topology.kubernetes.azure.com/interconnect-subgroup"
    "topology-labeler.io/azure-placement-group"))
-}}
{{- $profileArg := "" -}}
{{- $ownLabels := list -}}
{{- if eq $profile "custom" -}}
{{- $profileArg = printf "%s/profile.yaml" (include "topology-labeler.profileDir" .) -}}
{{- $ownLabels = $settings.ownLabels -}}
{{- if not $ownLabels -}}
{{- range $settings.file.levels -}}
{{- $ownLabels = append $ownLabels .key -}}
{{- end -}}
{{- $ownLabels = concat $ownLabels ($settings.file.extraLabels | default list) -}}
{{- with $settings.file.treeLabel -}}
{{- $ownLabels = append $ownLabels . -}}
{{- end -}}
{{- end -}}
{{- else -}}
{{- $profileArg = index $builtin $profile 0 -}}
{{- $ownLabels = index $builtin $profile 1 -}}
{{- end -}}
{{- /* ascend-superpod does not run --slinky-topology: no annotation of its own for it */ -}}
{{- $ownAnnotations := list
  "topology-labeler.io/owned-labels" "topology-labeler.io/owned-by"
  "topology-labeler.io/source-ids" "topology-labeler.io/owned-annotations"
  "topology.slinky.slurm.net/spec" -}}
{{- $args := list "agent" (printf "--profile=%s" $profileArg) -}}
{{- if eq $shape "ascend" -}}
{{- $ownAnnotations = list
  "topology-labeler.io/owned-labels" "topology-labeler.io/owned-by"
  "topology-labeler.io/source-ids" -}}
{{- if eq $profile "ascend" -}}
{{- $args = append $args "--topotree-name=default" -}}
{{- end -}}
{{- /* auto: libdcmi.so first (no subprocess), npu-smi if DCMI fails */ -}}
{{- $args = concat $args (list "--ascend-reader=auto" "--npu-smi=/usr/local/bin/npu-smi" "--port=8080") -}}
{{- else -}}
{{- /* With hostNetwork the port is opened on the node: avoid the crowded 8080. */ -}}
{{- $args = concat $args (list "--on-missing=skip" "--log-format=json" "--port=9716") -}}
{{- end -}}
{{- with .Values.agent.interval -}}
{{- $args = append $args (printf "--interval=%v" .) -}}
{{- end -}}
{{- with .Values.agent.readinessGate -}}
{{- if .removeTaint -}}
{{- $args = append $args (printf "--remove-taint=%s" .taint) -}}
{{- end -}}
{{- if .setCondition -}}
{{- $args = append $args "--set-condition" -}}
{{- end -}}
{{- end -}}
{{- $args = concat $args .Values.agent.extraArgs -}}
{{- $suffix := ternary "ascend" "agent" (eq $shape "ascend") -}}
shape: {{ $shape }}
name: {{ printf "%s-%s" (include "topology-labeler.fullname" .) $suffix }}
nameLabel: {{ ternary (printf "%s-ascend" .Chart.Name) .Chart.Name (eq $shape "ascend") }}
profileArg: {{ $profileArg | quote }}
ownLabels: {{ $ownLabels | toJson }}
ownAnnotations: {{ $ownAnnotations | toJson }}
args: {{ $args | toJson }}
settings: {{ $settings | toJson }}
{{- end }}

{{/* The agent's labels: its name, the project, its component, then Helm's. */}}
{{- define "topology-labeler.agentLabels" -}}
{{- $agent := include "topology-labeler.agent" . | fromYaml -}}
app.kubernetes.io/name: {{ $agent.nameLabel }}
app.kubernetes.io/part-of: topology-labeler
app.kubernetes.io/component: agent
{{ include "topology-labeler.helmLabels" . }}
{{- end }}

{{/* The audit exporter's labels; its pods and selector carry the first two. */}}
{{- define "topology-labeler.auditSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/component: audit
{{- end }}

{{- define "topology-labeler.auditLabels" -}}
{{ include "topology-labeler.auditSelector" . }}
{{ include "topology-labeler.helmLabels" . }}
{{- end }}
