#!/usr/bin/env bash
# Everyday kubectl against the embedded cluster: the commands an administrator types in a working day, each run as
# typed and checked for its exit status and what it prints. Unlike e2e.sh, a failing command does not stop the run:
# every command is tried, each result is printed as `pass:` or `FAIL:`, and the last line counts them, so one run
# shows everything that does not work. Run with KUBECONFIG pointing at a fresh `kmm-tui serve` (demo scenario).
set -uo pipefail

NS=everyday
WORK=$(mktemp -d)
BACKGROUND=()
cleanup() {
    for pid in "${BACKGROUND[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

: "${KUBECONFIG:?KUBECONFIG must point at the embedded cluster}"

PASSED=0
FAILED=()

# check NAME EXTENDED-REGEX COMMAND...: the command must exit 0 within a minute and print something matching.
check() {
    local name=$1 pattern=$2 out status
    shift 2
    out=$(timeout 60 "$@" 2>&1)
    status=$?
    if ((status == 0)) && grep -qE -- "$pattern" <<<"$out"; then
        PASSED=$((PASSED + 1))
        echo "pass: $name"
    else
        FAILED+=("$name")
        printf 'FAIL: %s (exit %s): %s\n' "$name" "$status" "$(head -c 600 <<<"$out")"
    fi
}

# eventually NAME EXTENDED-REGEX COMMAND...: like check, for what a controller does after the command before it
# returns (a StatefulSet's pod becoming ready, a Service's endpoints): the command is tried again every half second
# for up to 30 seconds, as an administrator would run it again, and only the last try counts.
eventually() {
    local name=$1 pattern=$2 out status deadline=$((SECONDS + 30))
    shift 2
    while :; do
        out=$(timeout 60 "$@" 2>&1)
        status=$?
        if ((status == 0)) && grep -qE -- "$pattern" <<<"$out"; then
            PASSED=$((PASSED + 1))
            echo "pass: $name"
            return
        fi
        ((SECONDS < deadline)) || break
        sleep 0.5
    done
    FAILED+=("$name")
    printf 'FAIL: %s (exit %s, for 30 s): %s\n' "$name" "$status" "$(head -c 600 <<<"$out")"
}

# refused NAME EXTENDED-REGEX COMMAND...: the command must fail, saying something matching.
refused() {
    local name=$1 pattern=$2 out
    shift 2
    if out=$(timeout 60 "$@" 2>&1); then
        FAILED+=("$name")
        printf 'FAIL: %s: expected a refusal, got: %s\n' "$name" "$(head -c 600 <<<"$out")"
    elif grep -qE -- "$pattern" <<<"$out"; then
        PASSED=$((PASSED + 1))
        echo "pass: $name"
    else
        FAILED+=("$name")
        printf 'FAIL: %s: refused, but /%s/ is not in: %s\n' "$name" "$pattern" "$(head -c 600 <<<"$out")"
    fi
}


# Images the demo scenario's registry holds: one that serves until stopped, one whose command completes.
SERVER_IMAGE=docker.io/library/nginx:1.27
TOOL_IMAGE=senthilrch/busybox:1.35.0
NODE=worker-a-2

# ---- the cluster ---------------------------------------------------------------------------------------------------
check "version" 'Server Version: v1\.' kubectl version
check "cluster-info" 'is running at https://127\.0\.0\.1' kubectl cluster-info
check "api-resources" '^pods +po +v1 +true +Pod' kubectl api-resources
check "api-versions" '^autoscaling/v2$' kubectl api-versions
check "readyz" '^ok$' kubectl get --raw /readyz
check "get nodes -o wide" "^$NODE +Ready .*INTERNAL-IP|^$NODE +Ready " kubectl get nodes -o wide
check "describe node" 'Kernel Version:' kubectl describe node "$NODE"
check "componentstatuses" 'etcd-0 +Healthy' kubectl get componentstatuses
check "the kubernetes Service" '^kubernetes +ClusterIP +10\.[0-9.]+ +<none> +443/TCP' kubectl get svc kubernetes -n default
check "the kubernetes Endpoints" '^kubernetes +127\.0\.0\.1:[0-9]+' kubectl get endpoints kubernetes -n default
check "explain pod.spec.containers" 'FIELDS:' kubectl explain pod.spec.containers
check "explain --recursive" 'replicas' kubectl explain deployment.spec --recursive
check "auth whoami" 'system:masters' kubectl auth whoami
check "auth can-i" '^yes$' kubectl auth can-i create deployments --all-namespaces

# ---- a namespace, configuration and secrets ------------------------------------------------------------------------
check "create namespace" "namespace/$NS created" kubectl create namespace "$NS"
check "create configmap" 'configmap/settings created' kubectl -n "$NS" create configmap settings --from-literal=mode=fast
check "create secret" 'secret/password created' kubectl -n "$NS" create secret generic password --from-literal=value=hunter2
check "label" 'labeled' kubectl -n "$NS" label configmap settings tier=config
check "annotate" 'annotated' kubectl -n "$NS" annotate configmap settings owner=ops
check "patch --type=merge" 'patched' kubectl -n "$NS" patch configmap settings --type=merge -p '{"data":{"mode":"slow"}}'
check "edit with an editor" 'edited' env KUBE_EDITOR="sed -i s/mode:\ slow/mode:\ steady/" kubectl -n "$NS" edit configmap settings
check "get -o jsonpath" '^steady$' kubectl -n "$NS" get configmap settings -o 'jsonpath={.data.mode}'
check "label selector" '^configmap/settings$' kubectl -n "$NS" get configmap -l tier=config -o name
check "field selector" '^configmap/settings$' kubectl -n "$NS" get configmap --field-selector metadata.name=settings -o name
check "get -o custom-columns" 'settings +ops' kubectl -n "$NS" get configmap settings -o custom-columns=NAME:.metadata.name,OWNER:.metadata.annotations.owner
check "create serviceaccount" 'serviceaccount/robot created' kubectl -n "$NS" create serviceaccount robot
check "create token" '^eyJ' kubectl -n "$NS" create token robot
check "create role" 'role.rbac.authorization.k8s.io/reader created' kubectl -n "$NS" create role reader --verb=get,list --resource=configmaps
check "create rolebinding" 'rolebinding.rbac.authorization.k8s.io/reader created' kubectl -n "$NS" create rolebinding reader --role=reader --serviceaccount="$NS:robot"
check "auth can-i --as" '^yes$' kubectl -n "$NS" auth can-i list configmaps --as="system:serviceaccount:$NS:robot"
refused "auth can-i --as refused" '^no' kubectl -n "$NS" auth can-i delete configmaps --as="system:serviceaccount:$NS:robot"

# ---- Deployments: scale, revisions, autoscaling, Services ----------------------------------------------------------
check "create deployment" 'deployment.apps/web created' kubectl -n "$NS" create deployment web --image="$SERVER_IMAGE" --replicas=2
check "rollout status" 'successfully rolled out' kubectl -n "$NS" rollout status deployment/web --timeout=50s
check "scale" 'deployment.apps/web scaled' kubectl -n "$NS" scale deployment/web --replicas=3
check "wait for the scaled replicas" 'condition met' kubectl -n "$NS" wait deployment/web --for=jsonpath='{.status.readyReplicas}'=3 --timeout=50s
check "set env (a new revision)" 'env updated' kubectl -n "$NS" set env deployment/web MODE=fast
check "rollout status of revision 2" 'successfully rolled out' kubectl -n "$NS" rollout status deployment/web --timeout=50s
check "rollout history" '^2 ' kubectl -n "$NS" rollout history deployment/web
check "rollout history --revision" 'MODE:\s+fast' kubectl -n "$NS" rollout history deployment/web --revision=2
check "rollout undo" 'rolled back' kubectl -n "$NS" rollout undo deployment/web
check "the undo took the old template" '^$' kubectl -n "$NS" get deployment web -o 'jsonpath={.spec.template.spec.containers[0].env}'
check "rollout restart" 'restarted' kubectl -n "$NS" rollout restart deployment/web
check "rollout pause" 'paused' kubectl -n "$NS" rollout pause deployment/web
check "rollout resume" 'resumed' kubectl -n "$NS" rollout resume deployment/web
check "autoscale" 'horizontalpodautoscaler.autoscaling/web autoscaled' kubectl -n "$NS" autoscale deployment web --min=1 --max=4 --cpu-percent=70
check "get hpa" '^web +Deployment/web ' kubectl -n "$NS" get hpa web
check "expose" 'service/web exposed' kubectl -n "$NS" expose deployment web --port=80 --target-port=8080
check "get svc" '^web +ClusterIP +10\.[0-9.]+ +<none> +80/TCP' kubectl -n "$NS" get svc web
eventually "endpoints follow the Service" '^web +[0-9.]+:8080' kubectl -n "$NS" get endpoints web
eventually "endpointslices" '^web-[a-z0-9]+ +IPv4 +8080' kubectl -n "$NS" get endpointslices -l kubernetes.io/service-name=web
check "describe svc" 'Endpoints:' kubectl -n "$NS" describe svc web
check "create service nodeport" 'service/edge created' kubectl -n "$NS" create service nodeport edge --tcp=80:8080
check "nodeport ports" '^edge +NodePort +10\.[0-9.]+ +<none> +80:3[0-9]+/TCP' kubectl -n "$NS" get svc edge
check "get all" 'deployment.apps/web' kubectl -n "$NS" get all

# ---- pods: run, logs, exec, debug ----------------------------------------------------------------------------------
check "run" 'pod/solo created' kubectl -n "$NS" run solo --image="$SERVER_IMAGE"
check "wait for Ready" 'condition met' kubectl -n "$NS" wait pod/solo --for=condition=Ready --timeout=50s
check "logs" '' kubectl -n "$NS" logs solo
check "exec" "^Linux$" kubectl -n "$NS" exec solo -- uname
check "exec a script" '^3 lines$' kubectl -n "$NS" exec solo -- sh -c 'n=$(seq 1 3 | wc -l); echo "$n lines"'
check "exec -i sh reads its input" '^hello from stdin$' bash -c "echo 'echo hello from stdin' | kubectl -n $NS exec -i solo -- sh"
echo "copied in and out" >"$WORK/copy.txt"
check "cp into the pod" '' kubectl -n "$NS" cp "$WORK/copy.txt" solo:/tmp/copy.txt
check "the copy is in the pod" '^copied in and out$' kubectl -n "$NS" exec solo -- cat /tmp/copy.txt
check "cp out of the pod" '' kubectl -n "$NS" cp solo:/tmp/copy.txt "$WORK/back.txt"
check "the copy came back" '^copied in and out$' cat "$WORK/back.txt"
check "debug (an ephemeral container)" '' kubectl -n "$NS" debug solo --profile=general --image="$TOOL_IMAGE" -c debugger -- true
check "the ephemeral container is in the pod" '^debugger$' kubectl -n "$NS" get pod solo -o 'jsonpath={.spec.ephemeralContainers[0].name}'
check "describe pod" 'Events:' kubectl -n "$NS" describe pod solo

# ---- Jobs and CronJobs ---------------------------------------------------------------------------------------------
check "create job" 'job.batch/once created' kubectl -n "$NS" create job once --image="$TOOL_IMAGE" -- echo done
check "wait for the job" 'condition met' kubectl -n "$NS" wait job/once --for=condition=Complete --timeout=50s
check "the job's generated selector" 'controller-uid' kubectl -n "$NS" get job once -o 'jsonpath={.spec.selector.matchLabels}'
check "logs job/" '^done$' kubectl -n "$NS" logs job/once
check "logs -f ends with the container" '' kubectl -n "$NS" logs -f job/once
check "create cronjob" 'cronjob.batch/nightly created' kubectl -n "$NS" create cronjob nightly --image="$TOOL_IMAGE" --schedule='0 3 * * *' -- echo nightly
check "create job --from=cronjob" 'job.batch/nightly-now created' kubectl -n "$NS" create job nightly-now --from=cronjob/nightly

# ---- manifests: apply, diff, server-side, kustomize, prune, replace -------------------------------------------------
mkdir -p "$WORK/app" "$WORK/kustomized"
cat >"$WORK/app/app.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, labels: {app: shop}}
data: {color: blue}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: store, labels: {app: shop}}
spec:
  serviceName: store
  replicas: 1
  selector: {matchLabels: {app: store}}
  template:
    metadata: {labels: {app: store}}
    spec: {containers: [{name: store, image: $SERVER_IMAGE}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, labels: {app: shop}}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, labels: {app: shop}}
spec:
  rules:
    - host: shop.example
      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, labels: {app: shop}}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
EOF
check "apply" 'statefulset.apps/store created' kubectl -n "$NS" apply -f "$WORK/app/app.yaml"
eventually "get statefulset" '^store +1/1 ' kubectl -n "$NS" get statefulset store
check "scale statefulset" 'scaled' kubectl -n "$NS" scale statefulset store --replicas=2
check "ordered statefulset pods" 'store-1' kubectl -n "$NS" wait pod/store-1 --for=condition=Ready --timeout=50s
check "get pvc, ingress" 'ingress.networking.k8s.io/shop' kubectl -n "$NS" get pvc,ingress -o name
sed -i 's/color: blue/color: green/' "$WORK/app/app.yaml"
# kubectl diff exits 1 when it finds differences.
check "diff" '\+  color: green' bash -c "kubectl -n $NS diff -f '$WORK/app/app.yaml'; test \$? -eq 1"
check "apply --server-side" 'serverside-applied' kubectl -n "$NS" apply --server-side --force-conflicts -f "$WORK/app/app.yaml"
check "apply --prune" 'configmap/app-config (unchanged|configured)' kubectl -n "$NS" apply --prune -l app=shop -f "$WORK/app/app.yaml"
cat >"$WORK/kustomized/kustomization.yaml" <<EOF
namespace: $NS
configMapGenerator:
  - name: generated
    literals: [greeting=hello]
EOF
check "apply -k" 'configmap/generated-[a-z0-9]+ created' kubectl apply -k "$WORK/kustomized"
kubectl -n "$NS" get configmap app-config -o yaml >"$WORK/replace.yaml"
sed -i 's/color: green/color: red/' "$WORK/replace.yaml"
check "replace" 'configmap/app-config replaced' kubectl -n "$NS" replace -f "$WORK/replace.yaml"

# ---- nodes: cordon, taint, drain -----------------------------------------------------------------------------------
check "cordon" 'cordoned' kubectl cordon "$NODE"
check "schedulable nodes (unset is false)" 'worker-a-0' kubectl get nodes --field-selector spec.unschedulable=false -o name
check "uncordon" 'uncordoned' kubectl uncordon "$NODE"
check "taint" 'tainted' kubectl taint nodes "$NODE" dedicated=ops:NoSchedule
check "untaint" 'untainted' kubectl taint nodes "$NODE" dedicated=ops:NoSchedule-
check "label node" 'labeled' kubectl label node "$NODE" rack=r1
check "drain evicts" 'evicting pod|drained' kubectl drain "$NODE" --ignore-daemonsets --delete-emptydir-data --timeout=50s
check "uncordon after drain" 'uncordoned' kubectl uncordon "$NODE"

# ---- events, proxy, certificates -----------------------------------------------------------------------------------
check "events" 'Scheduled|Created|Started' kubectl -n "$NS" events
check "get events --sort-by" 'LAST SEEN' kubectl -n "$NS" get events --sort-by=.lastTimestamp
kubectl proxy --port=0 >"$WORK/proxy.out" 2>&1 &
BACKGROUND+=($!)
for _ in $(seq 1 100); do grep -q 'Starting to serve' "$WORK/proxy.out" && break; sleep 0.1; done
PROXY_PORT=$(sed -nE 's/.*127\.0\.0\.1:([0-9]+).*/\1/p' "$WORK/proxy.out" | head -n 1)
check "proxy" '"kind": *"NamespaceList"' curl -sf "http://127.0.0.1:${PROXY_PORT:-1}/api/v1/namespaces"
openssl req -new -newkey rsa:2048 -nodes -keyout "$WORK/alice.key" -subj "/CN=alice/O=ops" -out "$WORK/alice.csr" 2>/dev/null
cat >"$WORK/csr.yaml" <<EOF
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: alice}
spec:
  request: $(base64 -w0 <"$WORK/alice.csr")
  signerName: kubernetes.io/kube-apiserver-client
  usages: [client auth]
EOF
check "create a CertificateSigningRequest" 'created' kubectl create -f "$WORK/csr.yaml"
check "certificate approve" 'approved' kubectl certificate approve alice
check "the certificate is issued" 'BEGIN CERTIFICATE' bash -c \
    "for i in \$(seq 1 100); do c=\$(kubectl get csr alice -o 'jsonpath={.status.certificate}'); [ -n \"\$c\" ] && { base64 -d <<<\"\$c\"; exit 0; }; sleep 0.1; done; exit 1"

# ---- clean-up ------------------------------------------------------------------------------------------------------
check "delete -f" 'deleted' kubectl -n "$NS" delete -f "$WORK/app/app.yaml" --wait=false
check "delete namespace" "namespace \"$NS\" deleted" kubectl delete namespace "$NS" --timeout=50s

printf '\n%d of %d everyday kubectl checks passed\n' "$PASSED" "$((PASSED + ${#FAILED[@]}))"
if ((${#FAILED[@]})); then
    printf 'failed: %s\n' "${FAILED[@]}"
    exit 1
fi
