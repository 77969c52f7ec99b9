// Package terraform holds the tests of Allot's Terraform code (the Go here
// is test-only): modules/tenant's meta expression is evaluated with HCL for
// sample inputs and fed to the governor's quota parser, so what Terraform
// writes is what the governor reads, and the module's validation rejects
// what the parser rejects.
package terraform
