#!/bin/sh
# Certificate chains for the route health checks, made with openssl into "$1" (one folder per case:
# served.pem, the leaf then what the server sends with it; key.pem; pool.pem, what the operator
# trusts; host, the name it asks for). x509-verify.go then verifies each as the operators' Go
# clients do. Run: sh x509-cases.sh /tmp/cases && go run x509-verify.go /tmp/cases > x509-verify.json
set -eu
out=$1
mkdir -p "$out"
cd "$out"
days=36500
APPS=apps.sno.store42.example.com

ca() { # name subject [signer]: a CA, self-signed or signed by signer
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -subj "/CN=$2" \
    -out "$1.csr" 2>/dev/null
  printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n' >"$1.ext"
  if [ $# -eq 3 ]; then
    openssl x509 -req -in "$1.csr" -CA "$3.crt" -CAkey "$3.key" -CAcreateserial -days $days -extfile "$1.ext" \
      -out "$1.crt" 2>/dev/null
  else
    openssl x509 -req -in "$1.csr" -signkey "$1.key" -days $days -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  fi
}
leaf() { # name signer subject [san]: a serving certificate
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -subj "/CN=$3" \
    -out "$1.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' >"$1.ext"
  if [ $# -eq 4 ]; then printf 'subjectAltName=%s\n' "$4" >>"$1.ext"; fi
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days $days -extfile "$1.ext" \
    -out "$1.crt" 2>/dev/null
}
case_() { # name host key served... -- pool...
  name=$1 host=$2 key=$3
  shift 3
  mkdir -p "cases/$name"
  printf '%s' "$host" >"cases/$name/host"
  cp "$key" "cases/$name/key.pem"
  : >"cases/$name/served.pem"
  while [ "$1" != -- ]; do cat "$1" >>"cases/$name/served.pem"; shift; done
  shift
  : >"cases/$name/pool.pem"
  for f in "$@"; do cat "$f" >>"cases/$name/pool.pem"; done
}

ca root ingress-operator@1
ca stranger stranger-ca
ca inter intermediate root
leaf wildcard root "*.$APPS" "DNS:*.$APPS"
leaf chained inter "*.$APPS" "DNS:*.$APPS"
leaf cnonly root "console-openshift-console.$APPS"
leaf exact root oauth "DNS:oauth-openshift.$APPS"

case_ wildcard-under-root console-openshift-console.$APPS wildcard.key wildcard.crt -- root.crt
case_ wildcard-one-label-only a.console-openshift-console.$APPS wildcard.key wildcard.crt -- root.crt
case_ wildcard-other-domain console-openshift-console.apps.sno.factory.example.com wildcard.key wildcard.crt -- root.crt
case_ untrusted-root console-openshift-console.$APPS wildcard.key wildcard.crt -- stranger.crt
case_ intermediate-sent-root-trusted oauth-openshift.$APPS chained.key chained.crt inter.crt -- root.crt
case_ intermediate-not-sent oauth-openshift.$APPS chained.key chained.crt -- root.crt
case_ intermediate-trusted-alone oauth-openshift.$APPS chained.key chained.crt inter.crt -- inter.crt
case_ leaf-trusted-alone console-openshift-console.$APPS wildcard.key wildcard.crt -- wildcard.crt
case_ common-name-only console-openshift-console.$APPS cnonly.key cnonly.crt -- root.crt
case_ exact-name oauth-openshift.$APPS exact.key exact.crt -- stranger.crt root.crt
case_ exact-name-other-host console-openshift-console.$APPS exact.key exact.crt -- root.crt
