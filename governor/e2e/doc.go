// Package e2e holds the governor's whole-stack end-to-end tests: a real
// Nomad v1.6.1 cluster from internal/testcluster, the real allot-governor,
// nomad-device-accel and nomad-driver-ckpt binaries, and the nomad CLI
// through the governor's proxy (admission, preemption and moves, the admission seal,
// accounting, ACLs and TLS, idle reclamation, the differential test of the
// proxy's judgement against what Nomad stores). Run them with
//
//	go test -tags e2e -run '^TestE2E' ./governor/e2e/
//
// and the benchmarks with
//
//	go test -tags e2e -run '^$' -bench . ./governor/e2e/
package e2e
