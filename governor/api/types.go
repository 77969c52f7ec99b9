// Package api holds the wire types of the governor's /allot/v1 HTTP API
// and a typed client for it (used by allotctl and the tests).
package api

import "time"

// Tenant is one governed namespace with its quota and usage.
type Tenant struct {
	Namespace    string
	Cohort       string
	Weight       float64
	Classes      []string `json:",omitempty"`
	DefaultClass string
	// Quota, Limit and Lend are by resource (cpu MHz, memory MiB, device
	// counts by type or vendor/type/model).
	Quota map[string]int64
	Limit map[string]int64
	Lend  map[string]int64
	// Usage is what live allocations and admitted-but-unplaced jobs hold.
	Usage         map[string]int64
	Queued        int
	DominantShare float64
	// Error is the validation error of the namespace's current meta; the
	// last valid quota (or zero) applies meanwhile.
	Error string `json:",omitempty"`
}

// TenantList is the response of GET /allot/v1/tenants.
type TenantList struct {
	Tenants []Tenant
}

// QueueEntry is one held job.
type QueueEntry struct {
	Namespace string
	JobID     string
	Class     string
	// Position is 1-based in the whole queue, TenantPosition in the
	// tenant's queue.
	Position       int
	TenantPosition int
	QueuedAt       time.Time
	Reason         string
}

// Queue is the response of GET /allot/v1/queue.
type Queue struct {
	// Total is the length of the whole queue; Jobs may be filtered to the
	// namespaces the caller can read.
	Total int
	Jobs  []QueueEntry
}

// Check is one admission check with its numbers.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// Why is the response of GET /allot/v1/jobs/<ns>/<id>/why.
type Why struct {
	Namespace      string
	JobID          string
	State          string
	Class          string
	Position       int
	TenantPosition int
	QueuedAt       time.Time `json:",omitempty"`
	Reason         string
	Checks         []Check
}

// Error is the body of every error response.
type Error struct {
	Error string
}
