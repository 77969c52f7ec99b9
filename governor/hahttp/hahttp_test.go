package hahttp

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func TestNamespaceWrite(t *testing.T) {
	tests := map[string]bool{
		"PUT /v1/namespace": true, "POST /v1/namespace": true, "DELETE /v1/namespace": false, "GET /v1/namespace": false,
		"PUT /v1/namespace/ml": true, "POST /v1/namespace/ml": true, "DELETE /v1/namespace/ml": true,
		"GET /v1/namespace/ml": false, "PUT /v1/namespaces": false, "GET /v1/namespaces": false,
		"PUT /v1/namespacex": false, "PUT /v1/jobs": false,
	}
	for key, want := range tests {
		t.Run(key, func(t *testing.T) {
			method, path, _ := strings.Cut(key, " ")
			must.Eq(t, want, NamespaceWrite(method, path))
		})
	}
}
