// Verifies the chains x509-cases.sh made as the console and authentication operators' clients do,
// for the vectors the route health model (test/cluster/models/route-client.ts) and the agent
// (src/kube/route-endpoints.ts) are tested against.
//
// Both operators give net/http a tls.Config with RootCAs only (console-operator
// pkg/console/controllers/healthcheck/controller.go clientWithCA, master @68415718;
// cluster-authentication-operator pkg/controllers/oauthendpoints/oauth_endpoints_controller.go
// getOAuthRouteTLSConfig, master @f3df4f5b), so crypto/tls verifies the server's chain as
// crypto/tls handshake_client.go verifyServerCertificate does: the first certificate is the leaf, the
// rest intermediates, x509.VerifyOptions{Roots, DNSName: ServerName, Intermediates}.
//
// Run: go run x509-verify.go <cases folder> > x509-verify.json
package main

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"sort"
)

type vector struct {
	Name   string `json:"name"`
	Host   string `json:"host"`
	Served string `json:"served"`
	Key    string `json:"key"`
	Pool   string `json:"pool"`
	// "" when Go accepts the chain for the host, else Go's error
	Error string `json:"error"`
}

func certs(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			panic(err)
		}
		out = append(out, c)
	}
}

func main() {
	dir := filepath.Join(os.Args[1], "cases")
	entries, err := os.ReadDir(dir)
	if err != nil {
		panic(err)
	}
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	out := []vector{}
	for _, name := range names {
		read := func(f string) []byte {
			b, err := os.ReadFile(filepath.Join(dir, name, f))
			if err != nil {
				panic(err)
			}
			return b
		}
		v := vector{Name: name, Host: string(read("host")), Served: string(read("served.pem")), Key: string(read("key.pem")), Pool: string(read("pool.pem"))}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM([]byte(v.Pool))
		served := certs([]byte(v.Served))
		opts := x509.VerifyOptions{Roots: roots, DNSName: v.Host, Intermediates: x509.NewCertPool()}
		for _, c := range served[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := served[0].Verify(opts); err != nil {
			v.Error = err.Error()
		}
		out = append(out, v)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
