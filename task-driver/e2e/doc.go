// Package e2e holds the ckpt driver's end-to-end tests: a real Nomad
// v1.6.1 cluster from internal/testcluster, the real nomad-driver-ckpt
// binary and the Go toy trainer. Run them with
//
//	go test -tags e2e -run '^TestE2E' ./task-driver/...
package e2e
