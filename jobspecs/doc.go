// Package jobspecs holds Allot's catalog of runnable example jobs
// (*.nomad.hcl). The Go code here is only tests: every jobspec parses with
// Nomad's own parser and validates (jobspecs_test.go), and the ones the dev
// cluster can run are run with toy payloads (jobspecs_e2e_test.go).
package jobspecs
