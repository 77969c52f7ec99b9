// Package e2e runs allotctl in-process (app.App with buffers) against a
// real Nomad v1.6.1 cluster and a real allot-governor. Run with
//
//	go test -tags e2e -run '^TestE2E' ./cli/e2e/
package e2e
