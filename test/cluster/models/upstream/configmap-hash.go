// Prints test vectors of library-go's GetConfigMapHash for the openshift-apiserver model
// (test/cluster/models/openshift-apiserver.ts) and the agent (src/kube/openshift-apiserver.ts).
//
// The hash is openshift/library-go pkg/operator/resource/resourcehash/as_configmap.go
// GetConfigMapHash (master @93ac9206), with corev1.ConfigMap.Data (a map[string]string) taken as
// the argument so that only the standard library is needed:
//
//	hasher := fnv.New32()
//	if err := json.NewEncoder(hasher).Encode(obj.Data); err != nil { ... }
//	return base64.URLEncoding.EncodeToString(hasher.Sum(nil)), nil
//
// Run: go run test/cluster/models/upstream/configmap-hash.go > test/cluster/models/upstream/configmap-hash.json
package main

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"os"
)

func getConfigMapHash(data map[string]string) (string, error) {
	hasher := fnv.New32()
	if err := json.NewEncoder(hasher).Encode(data); err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(hasher.Sum(nil)), nil
}

type vector struct {
	Data map[string]string `json:"data"`
	Hash string            `json:"hash"`
}

func main() {
	inputs := []map[string]string{
		{},
		{"config.yaml": `{"routingConfig":{"subdomain":"apps.x"}}`},
		{"config.yaml": `{"apiServerArguments":{"audit-log-format":["json"]},"routingConfig":{"subdomain":"apps.sno.factory.example.com"}}`},
		{"config.yaml": `{"apiServerArguments":{"audit-log-format":["json"]},"routingConfig":{"subdomain":"apps.sno.store42.example.com"}}`},
		{"b": "<a&b>", "a": "x\u2028y"},
		{"z": "1", "a": "2", "B": "3", "_": "4", "é": "5", "ä": "6"},
		{"key": "line one\nline two\ttab \"quoted\" back\\slash"},
		{"ctl": "\x00\x01\x1f\x7f", "nonascii": "naïve café ☃ 𝄞", "sep": "\u2029"},
		{"ca-bundle.crt": "-----BEGIN CERTIFICATE-----\nMIIB+/==\n-----END CERTIFICATE-----\n"},
	}
	out := []vector{}
	for _, in := range inputs {
		h, err := getConfigMapHash(in)
		if err != nil {
			panic(err)
		}
		out = append(out, vector{in, h})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
