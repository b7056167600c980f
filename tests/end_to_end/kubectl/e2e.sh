#!/usr/bin/env bash
# End-to-end check of the embedded cluster through kubectl. Run with KUBECONFIG pointing at a fresh `kmm-tui serve`.
# Every step announces itself with a `== ` line and checks its result; waits are bounded.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NS=kmm-e2e
WORK=$(mktemp -d)
BACKGROUND=()
cleanup() {
    for pid in "${BACKGROUND[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

: "${KUBECONFIG:?KUBECONFIG must point at the embedded cluster}"

# ---- helpers -------------------------------------------------------------------------------------------------------

step() { printf '\n== %s\n' "$*"; }

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
    [[ "$3" == "$2" ]] || fail "$1: expected '$2', got '$3'"
    echo "ok: $1"
}

# expect_match WHAT EXTENDED-REGEX TEXT
expect_match() {
    grep -qE -- "$2" <<<"$3" || fail "$1: /$2/ not found in: $3"
    echo "ok: $1"
}

# expect_no_match WHAT EXTENDED-REGEX TEXT
expect_no_match() {
    if grep -qE -- "$2" <<<"$3"; then fail "$1: /$2/ unexpectedly found in: $3"; fi
    echo "ok: $1"
}

# expect_fail EXTENDED-REGEX COMMAND...: the command must fail, and its output must match.
expect_fail() {
    local pattern=$1 out
    shift
    if out=$("$@" 2>&1); then fail "expected '$*' to fail, it printed: $out"; fi
    grep -qE -- "$pattern" <<<"$out" || fail "'$*' failed, but /$pattern/ is not in: $out"
    echo "ok: refused: $(head -n 1 <<<"$out")"
}

# eventually SECONDS WHAT COMMAND...: retry the command until it succeeds, for at most SECONDS.
eventually() {
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || fail "timed out waiting for: $what"
        sleep 0.1
    done
    echo "ok: $what"
}

k() { kubectl -n "$NS" "$@"; }

jp() { # jp RESOURCE JSONPATH: one field of one object in $NS
    k get "$1" -o "jsonpath=$2"
}

# ---- steps ---------------------------------------------------------------------------------------------------------

step "discovery, authentication and the namespace for this run"
expect_match "server version" '"gitVersion": *"v[0-9]+\.[0-9]+\.[0-9]+' "$(kubectl get --raw /version)"
expect_match "configmaps are discovered with short name cm" '^configmaps +cm +v1 +true +ConfigMap' "$(kubectl api-resources)"
expect_match "deployments are discovered in apps/v1" '^deployments +deploy +apps/v1 +true +Deployment' "$(kubectl api-resources --api-group=apps)"
expect_fail 'Unauthorized|provide credentials' kubectl --token=not-the-token get namespaces
kubectl create -f - <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: $NS
EOF
expect_eq "namespace is active" "Active" "$(kubectl get namespace "$NS" -o jsonpath='{.status.phase}')"
eventually 10 "the namespace gets its default ServiceAccount" k get serviceaccount default
eventually 10 "the namespace gets the cluster's CA" k get configmap kube-root-ca.crt
expect_match "the CA is a certificate" '^-----BEGIN CERTIFICATE-----' "$(jp cm/kube-root-ca.crt '{.data.ca\.crt}')"

step "create, get and list"
k create -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: alpha
data:
  k: v
EOF
expect_eq "get one field" "v" "$(jp cm/alpha '{.data.k}')"
expect_match "server sets uid" '^[0-9a-f-]{36}$' "$(jp cm/alpha '{.metadata.uid}')"
expect_match "server sets creationTimestamp" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' "$(jp cm/alpha '{.metadata.creationTimestamp}')"
expect_match "list by name" '^configmap/alpha$' "$(k get configmaps -o name)"
expect_match "table output" '^alpha +1 ' "$(k get cm --no-headers)"
expect_eq "field selector" "configmap/alpha" "$(k get cm --field-selector metadata.name=alpha -o name)"
others=$(k get cm --field-selector metadata.name!=alpha -o name)
expect_eq "field selector excludes" "configmap/kube-root-ca.crt" "$others"
expect_match "describe" '^Name: +alpha' "$(k describe cm alpha)"
expect_fail 'AlreadyExists|already exists' k create -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: alpha
EOF
expect_fail 'Invalid|RFC 1123' k create -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: Not_A_Name
EOF
expect_fail 'NotFound|not found' k get cm missing

step "kubectl's generators, which send protobuf bodies"
kubectl create namespace kmm-e2e-generated >/dev/null
expect_eq "create namespace" "Active" "$(kubectl get namespace kmm-e2e-generated -o jsonpath='{.status.phase}')"
GEN=kmm-e2e-generated
g() { kubectl -n "$GEN" "$@"; }
gjp() { g get "$1" -o "jsonpath=$2"; }
expect_eq "its name label is defaulted" "kmm-e2e-generated" \
    "$(kubectl get namespace kmm-e2e-generated -o jsonpath='{.metadata.labels.kubernetes\.io/metadata\.name}')"
g create configmap generated --from-literal=g=1 --from-literal=blank= >/dev/null
expect_eq "create configmap --from-literal" "1" "$(gjp cm/generated '{.data.g}')"
expect_match "an empty literal is kept" '"blank": ""' "$(g get cm generated -o json)"
expect_fail 'AlreadyExists|already exists' g create configmap generated --from-literal=g=2
g create secret generic generated --from-literal=password='s3cret pass' >/dev/null
expect_eq "create secret generic stores base64" "s3cret pass" "$(gjp secret/generated '{.data.password}' | base64 -d)"
expect_eq "the secret is Opaque" "Opaque" "$(gjp secret/generated '{.type}')"
g create deployment generated --image=registry.example/web:1.2 --replicas=2 --port=8080 >/dev/null
expect_eq "create deployment stores replicas" "2" "$(gjp deploy/generated '{.spec.replicas}')"
expect_eq "its container, named after the image" "web registry.example/web:1.2 8080" \
    "$(gjp deploy/generated '{.spec.template.spec.containers[0].name} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}')"
expect_eq "its selector" "generated" "$(gjp deploy/generated '{.spec.selector.matchLabels.app}')"
expect_eq "its strategy is defaulted" "RollingUpdate 25%" "$(gjp deploy/generated '{.spec.strategy.type} {.spec.strategy.rollingUpdate.maxSurge}')"
expect_match "the server stamps it" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' "$(gjp deploy/generated '{.metadata.creationTimestamp}')"
g create deployment generated-dry --image=registry.example/web:1.2 --dry-run=server >/dev/null
expect_fail 'NotFound|not found' g get deploy generated-dry
g create serviceaccount generated >/dev/null
expect_match "create serviceaccount" '^serviceaccount/generated$' "$(g get sa generated -o name)"
kubectl delete namespace kmm-e2e-generated --timeout=20s >/dev/null

step "watch with kubectl get -w"
# Without --watch-only kubectl lists first and watches from the list's resourceVersion: once alpha is printed,
# every later change is delivered.
timeout 15 kubectl -n "$NS" get configmaps -w --output-watch-events >"$WORK/watch.out" 2>&1 &
BACKGROUND+=($!)
eventually 10 "the watch lists alpha" grep -qE '^ADDED +alpha ' "$WORK/watch.out"
k create -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: watched
EOF
k label cm watched seen=yes >/dev/null
k delete cm watched >/dev/null
eventually 10 "ADDED watched" grep -qE '^ADDED +watched ' "$WORK/watch.out"
eventually 10 "MODIFIED watched" grep -qE '^MODIFIED +watched ' "$WORK/watch.out"
eventually 10 "DELETED watched" grep -qE '^DELETED +watched ' "$WORK/watch.out"
expect_eq "events arrive in order" "ADDED MODIFIED DELETED" "$(grep -E ' watched ' "$WORK/watch.out" | awk '{print $1}' | xargs)"
kill "${BACKGROUND[-1]}" 2>/dev/null || true

step "kubectl wait"
k wait --for=jsonpath='{.data.state}'=ready cm/alpha --timeout=10s >"$WORK/wait.out" 2>&1 &
waiter=$!
BACKGROUND+=($waiter)
k patch cm alpha --type=merge -p '{"data":{"state":"ready"}}' >/dev/null
wait "$waiter" || fail "kubectl wait did not see the change: $(cat "$WORK/wait.out")"
echo "ok: kubectl wait saw data.state=ready"
expect_fail 'timed out' k wait --for=jsonpath='{.data.state}'=never cm/alpha --timeout=1s

step "label and annotate"
k label cm alpha tier=web >/dev/null
expect_eq "label set" "web" "$(jp cm/alpha '{.metadata.labels.tier}')"
expect_fail 'already has a value' k label cm alpha tier=db
k label cm alpha tier=db --overwrite >/dev/null
expect_eq "label overwritten" "db" "$(jp cm/alpha '{.metadata.labels.tier}')"
k create -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: beta
  labels:
    tier: cache
EOF
expect_eq "selector =" "configmap/alpha" "$(k get cm -l tier=db -o name)"
expect_eq "selector in" "configmap/alpha configmap/beta" "$(k get cm -l 'tier in (db,cache)' -o name | sort | xargs)"
# The namespace's root CA has no tier: notin and !tier select it too, as on any cluster.
expect_eq "selector notin" "configmap/beta configmap/kube-root-ca.crt" "$(k get cm -l 'tier notin (db)' -o name | xargs)"
expect_eq "selector !=" "configmap/beta" "$(k get cm -l 'tier,tier!=db' -o name | xargs)"
k label cm beta tier- >/dev/null
expect_eq "selector !key" "configmap/beta configmap/kube-root-ca.crt" "$(k get cm -l '!tier' -o name | xargs)"
stale_rv=$(jp cm/alpha '{.metadata.resourceVersion}')
k annotate cm alpha note='hello world' >/dev/null
expect_eq "annotation set" "hello world" "$(jp cm/alpha '{.metadata.annotations.note}')"
expect_fail 'Conflict|has been modified' k label cm alpha extra=1 --resource-version="$stale_rv"
k annotate cm alpha note- >/dev/null
expect_eq "annotation removed" "name=alpha note=" "$(jp cm/alpha 'name={.metadata.name} note={.metadata.annotations.note}')"
k label cm alpha tier- >/dev/null
expect_eq "label removed" "name=alpha tier=" "$(jp cm/alpha 'name={.metadata.name} tier={.metadata.labels.tier}')"

step "patch: JSON merge, JSON patch, strategic merge"
k patch cm alpha --type=merge -p '{"data":{"m":"1","k":null}}' >/dev/null
expect_eq "merge patch adds and removes keys" "m=1 k=" "$(jp cm/alpha 'm={.data.m} k={.data.k}')"
k patch cm alpha --type=json -p '[{"op":"test","path":"/data/m","value":"1"},{"op":"add","path":"/data/j","value":"2"}]' >/dev/null
expect_eq "json patch" "2" "$(jp cm/alpha '{.data.j}')"
expect_fail 'is invalid.*test' k patch cm alpha --type=json -p '[{"op":"test","path":"/data/m","value":"other"}]'
expect_eq "failed json patch changed nothing" "1" "$(jp cm/alpha '{.data.m}')"
k create -f "$HERE/deployment.yaml" >/dev/null
expect_eq "new deployment generation" "1" "$(jp deploy/web '{.metadata.generation}')"
k patch deploy web -p '{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/app:3"}]}}}}' >/dev/null
expect_eq "strategic merge keeps the other container" "app=registry.example/app:3 sidecar=registry.example/sidecar:1" \
    "$(jp deploy/web '{range .spec.template.spec.containers[*]}{.name}={.image} {end}' | xargs)"
expect_eq "strategic merge keeps env" "MODE DEBUG" "$(jp deploy/web '{.spec.template.spec.containers[0].env[*].name}')"
expect_eq "spec change bumps generation" "2" "$(jp deploy/web '{.metadata.generation}')"
k patch deploy web -p '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}' >/dev/null
expect_eq "strategic \$patch: delete" "app" "$(jp deploy/web '{.spec.template.spec.containers[*].name}')"
k label deploy web patched=yes >/dev/null
expect_eq "metadata change keeps generation" "3" "$(jp deploy/web '{.metadata.generation}')"
k patch deploy web --type=merge -p '{"spec":{"template":{"spec":{"containers":[{"name":"solo","image":"registry.example/solo:1"}]}}}}' >/dev/null
expect_eq "merge patch replaces lists" "solo" "$(jp deploy/web '{.spec.template.spec.containers[*].name}')"
k delete deploy web >/dev/null

step "apply twice (client-side)"
expect_match "first apply creates" 'configmap/applied created' "$(k apply -f "$HERE/applied.yaml")"
expect_match "same apply is unchanged" 'configmap/applied unchanged' "$(k apply -f "$HERE/applied.yaml")"
expect_match "last-applied annotation" '"b":"2"' "$(jp cm/applied '{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}')"
k patch cm applied --type=merge -p '{"data":{"live":"x"}}' >/dev/null
expect_match "second apply configures" 'configmap/applied configured' "$(k apply -f "$HERE/applied-v2.yaml")"
expect_eq "three-way merge" "a=10 b= c=3 live=x" "$(jp cm/applied 'a={.data.a} b={.data.b} c={.data.c} live={.data.live}')"
expect_match "deployment created by apply" 'deployment.apps/web created' "$(k apply -f "$HERE/deployment.yaml")"
expect_match "deployment configured by apply" 'deployment.apps/web configured' "$(k apply -f "$HERE/deployment-v2.yaml")"
expect_eq "applied replicas" "3" "$(jp deploy/web '{.spec.replicas}')"
expect_eq "applied containers" "app=registry.example/app:2 sidecar=registry.example/sidecar:1" \
    "$(jp deploy/web '{range .spec.template.spec.containers[*]}{.name}={.image} {end}' | xargs)"
expect_eq "apply removed DEBUG from the env list" "MODE" "$(jp deploy/web '{.spec.template.spec.containers[0].env[*].name}')"
expect_match "applying again is unchanged" 'deployment.apps/web unchanged' "$(k apply -f "$HERE/deployment-v2.yaml")"

step "apply --server-side"
expect_match "server-side apply" 'configmap/ssa serverside-applied' "$(k apply --server-side -f "$HERE/ssa.yaml")"
expect_match "managedFields record the apply" 'kubectl:Apply' \
    "$(jp cm/ssa '{range .metadata.managedFields[*]}{.manager}:{.operation} {end}')"
expect_fail 'conflict|Conflict' k apply --server-side --field-manager=other -f "$HERE/ssa-other.yaml"
expect_eq "conflicting apply changed nothing" "from-kubectl" "$(jp cm/ssa '{.data.shared}')"
k apply --server-side --field-manager=other --force-conflicts -f "$HERE/ssa-other.yaml" >/dev/null
expect_eq "forced apply takes the field" "from-other" "$(jp cm/ssa '{.data.shared}')"
expect_match "both managers recorded" 'other:Apply' "$(jp cm/ssa '{range .metadata.managedFields[*]}{.manager}:{.operation} {end}')"
k apply --server-side -f "$HERE/ssa-v2.yaml" >/dev/null
expect_eq "fields dropped from an apply are removed, others' stay" "mine= shared=from-other owner=kubectl" \
    "$(jp cm/ssa 'mine={.data.mine} shared={.data.shared} owner={.metadata.labels.owner}')"

step "server-side apply of an ordinary Deployment, whose port's protocol the server defaults"
expect_match "a Deployment with a port without protocol" 'deployment.apps/ssa-web serverside-applied' \
    "$(k apply --server-side -f "$HERE/ssa-deployment.yaml")"
expect_eq "the port's protocol is TCP" "TCP" "$(jp deployment/ssa-web '{.spec.template.spec.containers[0].ports[0].protocol}')"
expect_eq "the probe's period is defaulted" "10" \
    "$(jp deployment/ssa-web '{.spec.template.spec.containers[0].readinessProbe.periodSeconds}')"
expect_match "applied again" 'deployment.apps/ssa-web serverside-applied' \
    "$(k apply --server-side -f "$HERE/ssa-deployment.yaml")"

step "built-in objects are validated as kube-apiserver validates them"
expect_fail 'spec.containers\[0\].name: Invalid value: "Foo_Bar"' k create -f - <<EOF
apiVersion: v1
kind: Pod
metadata: {name: bad-container}
spec: {containers: [{name: Foo_Bar, image: nginx}]}
EOF
resources=$(kubectl api-resources)
expect_match "services are discovered" '^services +svc +v1 +true +Service' "$resources"
expect_match "replication controllers are discovered" '^replicationcontrollers +rc +v1 +true +ReplicationController' "$resources"
expect_match "API services are discovered" '^apiservices +apiregistration.k8s.io/v1 +false +APIService' "$resources"
expect_match "endpoint slices are discovered" '^endpointslices +discovery.k8s.io/v1 +true +EndpointSlice' "$resources"

step "replace with a stale object fails with Conflict"
k get cm alpha -o yaml >"$WORK/stale.yaml"
k label cm alpha bumped=yes >/dev/null
expect_fail 'Conflict|the object has been modified' k replace -f "$WORK/stale.yaml"
k get cm alpha -o yaml | sed 's/^  j: "2"$/  j: "replaced"/' >"$WORK/fresh.yaml"
k replace -f "$WORK/fresh.yaml" >/dev/null
expect_eq "replace with the current resourceVersion" "replaced" "$(jp cm/alpha '{.data.j}')"

step "a CRD applied then used"
kubectl apply -f "$HERE/crd-gadget.yaml" >/dev/null
kubectl wait --for=condition=Established crd/gadgets.e2e.kmm-tui.io --timeout=10s >/dev/null
echo "ok: CRD established"
expect_match "discovery lists the short name and kind" '^gadgets +gd +e2e\.kmm-tui\.io/v1 +true +Gadget' \
    "$(kubectl api-resources --api-group=e2e.kmm-tui.io)"
k apply -f "$HERE/gadget.yaml" >/dev/null
expect_eq "by short name" "gadget.e2e.kmm-tui.io/g1" "$(k get gd -o name)"
expect_eq "by singular" "gadget.e2e.kmm-tui.io/g1" "$(k get gadget -o name)"
expect_eq "by plural.group" "gadget.e2e.kmm-tui.io/g1" "$(k get gadgets.e2e.kmm-tui.io -o name)"
expect_eq "by category" "gadget.e2e.kmm-tui.io/g1" "$(k get kmme2e -o name)"
expect_match "printer columns" '^NAME +COLOR +SIZE' "$(k get gd)"
expect_eq "default applied" "3" "$(jp gd/g1 '{.spec.size}')"
expect_eq "int-or-string kept" "25%" "$(jp gd/g1 '{.spec.rollout}')"
expect_eq "preserve-unknown-fields kept" "[1,2]" "$(jp gd/g1 '{.spec.extra.anything}')"
expect_fail 'unknown field "spec.bogus"' k apply -f "$HERE/gadget-unknown-field.yaml"
expect_fail 'NotFound|not found' k get gd g2
k apply --validate=false -f "$HERE/gadget-unknown-field.yaml" >/dev/null
expect_eq "unknown field pruned" "color=blue bogus=" "$(jp gd/g2 'color={.spec.color} bogus={.spec.bogus}')"
expect_eq "unknown field kept under preserve-unknown-fields" "true" "$(jp gd/g2 '{.spec.extra.kept}')"
invalid=$(k apply -f "$HERE/gadget-invalid.yaml" 2>&1) && fail "an invalid gadget was accepted: $invalid"
expect_match "enum enforced" 'spec\.color' "$invalid"
expect_match "maximum enforced" 'spec\.size' "$invalid"
k patch gd g1 --type=merge -p '{"status":{"phase":"Ignored"}}' >/dev/null
expect_eq "main endpoint ignores status" "name=g1 phase=" "$(jp gd/g1 'name={.metadata.name} phase={.status.phase}')"
k patch gd g1 --subresource=status --type=merge \
    -p '{"spec":{"size":9},"status":{"phase":"Ready","conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
expect_eq "status subresource sets status only" "phase=Ready size=3 generation=1" \
    "$(jp gd/g1 'phase={.status.phase} size={.spec.size} generation={.metadata.generation}')"
k wait --for=condition=Ready gd/g1 --timeout=10s >/dev/null
echo "ok: kubectl wait --for=condition on a custom resource"
k patch gd g1 --type=merge -p '{"spec":{"size":5}}' >/dev/null
expect_eq "spec change bumps generation" "2" "$(jp gd/g1 '{.metadata.generation}')"
expect_fail 'spec\.size.*less than or equal to 10' k patch gd g1 --type=merge -p '{"spec":{"size":11}}'
expect_fail 'is not supported by .*Gadget' k patch gd g1 -p '{"spec":{"size":4}}'
expect_match "server-side apply of a custom resource" 'gadget.e2e.kmm-tui.io/g1 serverside-applied' \
    "$(k apply --server-side -f "$HERE/gadget.yaml")"

step "finalizers"
k create -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  finalizers: [e2e.kmm-tui.io/hold]
EOF
k delete cm held --wait=false >/dev/null
expect_match "deletionTimestamp set" '^[0-9]{4}-' "$(jp cm/held '{.metadata.deletionTimestamp}')"
expect_fail 'timed out' k wait --for=delete cm/held --timeout=1s
k patch cm held --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null
k wait --for=delete cm/held --timeout=10s >/dev/null
echo "ok: gone once its finalizer was removed"

step "owner references and garbage collection"
owned_by() { # owned_by NAME OWNER
    local uid
    uid=$(jp "cm/$2" '{.metadata.uid}')
    k create -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: $1
  ownerReferences:
    - apiVersion: v1
      kind: ConfigMap
      name: $2
      uid: $uid
      blockOwnerDeletion: true
EOF
}
for owner in owner-bg owner-orphan owner-fg; do
    k create -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: $owner
EOF
done
owned_by dep-bg owner-bg >/dev/null
owned_by dep-orphan owner-orphan >/dev/null
owned_by dep-fg owner-fg >/dev/null
k delete cm owner-bg >/dev/null
k wait --for=delete cm/dep-bg --timeout=10s >/dev/null
echo "ok: background deletion collects the dependent"
k delete cm owner-orphan --cascade=orphan >/dev/null
orphaned() { # the dependent still exists and no longer names an owner
    local refs
    refs=$(jp cm/dep-orphan '{.metadata.ownerReferences}') && [[ -z "$refs" ]]
}
eventually 10 "orphaned dependent survives without its ownerReference" orphaned
k delete cm owner-fg --cascade=foreground --timeout=10s >/dev/null
expect_fail 'NotFound|not found' k get cm dep-fg
expect_fail 'NotFound|not found' k get cm owner-fg
echo "ok: foreground deletion removes the dependent and then the owner"

step "namespace deletion"
kubectl create -f - <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: kmm-e2e-doomed
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: inside
  namespace: kmm-e2e-doomed
---
apiVersion: e2e.kmm-tui.io/v1
kind: Gadget
metadata:
  name: inside
  namespace: kmm-e2e-doomed
spec:
  color: blue
EOF
kubectl delete namespace kmm-e2e-doomed --timeout=20s >/dev/null
expect_fail 'NotFound|not found' kubectl get namespace kmm-e2e-doomed
left=$(kubectl get cm -n kmm-e2e-doomed -o name)
expect_eq "its configmaps are gone" "" "$left"
left=$(kubectl get gd -n kmm-e2e-doomed -o name)
expect_eq "its custom resources are gone" "" "$left"

step "authorization: the viewer context, impersonation, access reviews and ServiceAccount tokens"
# serve names the read-only context after its cluster: <current context>-viewer.
VIEWER_CONTEXT="$(kubectl config current-context)-viewer"
viewer() { kubectl --context "$VIEWER_CONTEXT" -n "$NS" "$@"; }
expect_eq "the viewer context reads" "configmap/alpha" "$(viewer get cm alpha -o name)"
expect_fail "configmaps \"alpha\" is forbidden: User \"kmm-tui-viewer\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"$NS\"" viewer delete cm alpha
expect_eq "the refused delete left it alone" "configmap/alpha" "$(k get cm alpha -o name)"
expect_fail 'secrets is forbidden: User "kmm-tui-viewer" cannot list resource "secrets"' viewer get secrets
expect_eq "--as acts as the viewer" "configmap/alpha" "$(k --as kmm-tui-viewer get cm alpha -o name)"
expect_fail 'User "kmm-tui-viewer" cannot delete resource "configmaps"' k --as kmm-tui-viewer delete cm alpha
expect_fail 'users "kmm-tui-admin" is forbidden: User "kmm-tui-viewer" cannot impersonate resource "users" in API group "" at the cluster scope' viewer --as kmm-tui-admin get cm
k create -f - <<EOF
apiVersion: v1
kind: ServiceAccount
metadata:
  name: bot
EOF
# kubectl sends the bodies of access reviews and token requests as protobuf.
expect_eq "auth can-i: yes" "yes" "$(k auth can-i delete configmaps)"
expect_eq "auth can-i: no" "no" "$(viewer auth can-i delete configmaps || true)"
expect_eq "auth can-i --as" "no" "$(k auth can-i --as kmm-tui-viewer create configmaps || true)"
expect_match "auth can-i --list" 'configmaps +\[\] +\[\] +\[get list watch\]' "$(viewer auth can-i --list)"
token=$(k create token bot --duration=10m)
expect_match "a token is a JWT" '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' "$token"
expect_match "the token authenticates (discovery is open)" 'apps' "$(kubectl --token="$token" get --raw /apis)"
expect_fail "configmaps is forbidden: User \"system:serviceaccount:$NS:bot\" cannot list resource \"configmaps\"" k --token="$token" get cm
expect_eq "auth can-i for the ServiceAccount" "no" "$(k auth can-i list configmaps --as "system:serviceaccount:$NS:bot" || true)"

step "pagination with --chunk-size"
for i in $(seq -w 1 23); do
    printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: page-%s\n  labels:\n    page: "yes"\n' "$i"
done >"$WORK/pages.yaml"
k create -f "$WORK/pages.yaml" >/dev/null
k get cm -l page=yes --chunk-size=5 -o name -v=6 >"$WORK/pages.out" 2>"$WORK/pages.log"
expect_eq "every object listed once, in order" "$(seq -w 1 23 | sed 's|^|configmap/page-|' | xargs)" "$(xargs <"$WORK/pages.out")"
# -v=6 logs one line per response; older kubectl writes `GET https://…`, newer `verb="GET" url="https://…"`.
expect_eq "five requests of five" "5" "$(grep -cE 'GET.*https://[^ "]*/configmaps\?[^ "]*limit=5' "$WORK/pages.log")"
expect_eq "four of them continue" "4" "$(grep -cE 'GET.*https://[^ "]*/configmaps\?[^ "]*continue=' "$WORK/pages.log")"
expect_eq "table output pages too" "23" "$(k get cm -l page=yes --chunk-size=4 --no-headers | wc -l | xargs)"

step "/metrics counts requests, and only for a client with a token"
if ! command -v curl >/dev/null; then
    echo "skipping /metrics: curl not found on PATH"
else
    server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
    token=$(kubectl config view --raw --minify -o jsonpath='{.users[0].user.token}')
    kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$WORK/ca.crt"
    scrape() { curl -sS --fail --cacert "$WORK/ca.crt" -H "Authorization: Bearer $token" "$server/metrics"; }
    # list_count: how many configmap lists kubectl has made, as /metrics says.
    list_count() {
        scrape | sed -nE 's/^apiserver_request_total\{verb="LIST",resource="configmaps",code="200",client="kubectl"\} ([0-9]+)$/\1/p'
    }
    before=$(list_count)
    expect_match "kubectl's configmap lists are counted" '^[0-9]+$' "$before"
    for _ in 1 2 3; do k get cm -o name >/dev/null; done
    after=$(list_count)
    expect_eq "three more lists, three more counted" "$((before + 3))" "$after"
    metrics=$(scrape)
    expect_match "request durations" '^apiserver_request_duration_seconds_bucket\{le="[^"]+",verb="LIST",resource="configmaps"\} [1-9][0-9]*' "$metrics"
    expect_match "stored objects by resource" '^apiserver_storage_objects\{resource="/configmaps"\} [0-9]+' "$metrics"
    expect_match "stored bytes by resource" '^apiserver_storage_size_bytes\{resource="/configmaps"\} [1-9][0-9]*' "$metrics"
    expect_match "watch history size" '^apiserver_watch_history_events [0-9]+' "$metrics"
    expect_eq "without a token: 401" "401" \
        "$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$WORK/ca.crt" "$server/metrics")"
fi

printf '\nall kubectl checks passed\n'
