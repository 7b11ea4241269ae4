#!/usr/bin/env bash
# The relocation proof of concept's way, for comparison: one kubectl call per object.
# Usage: cluster-baseline.sh KUBECONFIG OLD_APPS_DOMAIN NEW_APPS_DOMAIN API_HOST
set -euo pipefail
export KUBECONFIG=$1
old=$2 new=$3 api=$4
k=/usr/bin/kubectl
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# pending CSRs, approved one by one
for csr in $($k get csr -o go-template='{{range .items}}{{if not .status}}{{.metadata.name}}{{"\n"}}{{end}}{{end}}'); do
  $k certificate approve "$csr" >/dev/null
done
# certificates: openssl, one secret per host
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/ca.key" -out "$dir/ca.crt" -subj "/CN=site CA" -days 3650 2>/dev/null
for host in "*.$new" "console-openshift-console.$new" "downloads-openshift-console.$new" "oauth-openshift.$new" "$api"; do
  name=baseline-$(echo "$host" | tr -c 'a-z0-9\n' '-' | cut -c1-40)
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=$host" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 730 -out "$dir/$name.crt" -extfile <(printf 'subjectAltName=DNS:%s' "$host") 2>/dev/null
  $k create secret tls "$name" -n openshift-config --cert "$dir/$name.crt" --key "$dir/$name.key" --dry-run=client -o yaml | $k apply -f - >/dev/null
done
routes='[{"namespace":"openshift-console","name":"console","hostname":"console-openshift-console.'$new'","servingCertKeyPairSecret":{"name":"baseline-console-openshift-console-apps-sno"}},{"namespace":"openshift-console","name":"downloads","hostname":"downloads-openshift-console.'$new'","servingCertKeyPairSecret":{"name":"baseline-downloads-openshift-console-apps-s"}},{"namespace":"openshift-authentication","name":"oauth-openshift","hostname":"oauth-openshift.'$new'","servingCertKeyPairSecret":{"name":"baseline-oauth-openshift-apps-sno-store42-e"}}]'
$k patch ingresses.config.openshift.io cluster --type merge -p "{\"spec\":{\"appsDomain\":\"$new\",\"componentRoutes\":$routes}}" >/dev/null
$k patch apiservers.config.openshift.io cluster --type merge -p "{\"spec\":{\"servingCerts\":{\"namedCertificates\":[{\"names\":[\"$api\"],\"servingCertificate\":{\"name\":\"baseline-api\"}}]}}}" >/dev/null
# routes, one patch each
$k get routes.route.openshift.io -A -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name} {.spec.host}{"\n"}{end}' >"$dir/routes"
while read -r ns name host; do
  case "$host" in
    *".$old") $k patch routes.route.openshift.io -n "$ns" "$name" --type merge -p "{\"spec\":{\"host\":\"${host%.$old}.$new\"}}" >/dev/null ;;
  esac
done <"$dir/routes"
# pull secret and mirrors
echo '{"auths":{"registry.store42.example.com:5000":{"auth":"c3RvcmU6c3RvcmU="}}}' >"$dir/pull.json"
$k create secret generic pull-secret -n openshift-config --type kubernetes.io/dockerconfigjson --from-file=.dockerconfigjson="$dir/pull.json" --dry-run=client -o yaml | $k apply -f - >/dev/null
cat <<YAML | $k apply -f - >/dev/null
apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata: {name: baseline-digest-mirrors}
spec:
  imageDigestMirrors: [{source: quay.io/openshift-release-dev/ocp-release, mirrors: [registry.store42.example.com:5000/ocp/release]}]
YAML
