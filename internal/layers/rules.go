// Package layers holds the import rules between Allot's parts (which package
// may import which) and checks a module's packages against them. The rules
// live in one table, Rules; `make check` runs the check over the repository
// (TestRepository) for the plain and the e2e build.
package layers

// Module is the import path of Allot's Go module; rules name packages
// relative to it.
const Module = "github.com/allot-sh/allot"

// Rule says what the packages matching From may import from inside the
// module. A pattern is a package path relative to the module, or such a path
// followed by "/..." for it and everything below it. For a package, the rule
// with the longest matching From decides; imports from outside the module
// are not judged.
type Rule struct {
	From  string   // packages this rule covers
	Allow []string // module packages they may import
	Why   string   // the reason, for the failure message and the docs
}

// Contracts are the neutral packages every part may import: wire formats
// and meta keys that more than one part reads or writes.
var Contracts = []string{
	"contract/...",  // ckptevent: the driver's task events, read by the governor
	"internal/proc", // process helpers (no part's logic)
	"internal/repo", // finds the checkout (tests and dev tooling)
}

// Rules is the table. Parts (device-plugin, task-driver, governor, cli)
// never import each other except through Contracts, and the engine stays a
// pure function of its inputs. Test harnesses (internal/testcluster,
// internal/pgtest) appear in no Allow list: only test files import them.
var Rules = []Rule{
	{From: "device-plugin/...", Allow: with("device-plugin/..."),
		Why: "the device plugin runs on clients and imports no other part"},
	{From: "task-driver/...", Allow: with("task-driver/..."),
		Why: "the task driver runs on clients and imports no other part"},
	{From: "governor/...", Allow: with("governor/..."),
		Why: "the governor imports no client-side part and no CLI"},
	{From: "governor/engine", Allow: with("governor/quota"),
		Why: "the engine is a pure function of a snapshot: it imports nothing of the governor but quota"},
	{From: "governor/quota", Allow: with(),
		Why: "quota parses namespace meta and imports nothing of Allot"},
	{From: "governor/jobmeta", Allow: with(),
		Why: "jobmeta owns the job meta keys and imports nothing of Allot"},
	{From: "governor/ha", Allow: with(),
		Why: "the leader election is a leaf: the governor's wiring imports it, it imports nothing of Allot"},
	{From: "governor/hahttp", Allow: with(),
		Why: "HA's forwarding header and namespace-write routes, read by the proxy and the ledger's auditor: a leaf, so the data layer need not import the proxy"},
	{From: "governor/allotapi", Allow: with(),
		Why: "the API wire types and client are imported by the CLI and must stay a leaf"},
	{From: "governor/sim/...", Allow: with("governor/sim/...", "governor/engine", "governor/quota",
		"governor/config", "device-plugin/inventory"),
		Why: "the simulator runs the engine alone: no wiring, no Nomad-facing packages (it writes inventory files for the fleet)"},
	{From: "cli/...", Allow: with("cli/...", "governor/allotapi", "governor/quota", "governor/config"),
		Why: "the CLI talks to the governor through its API client and reads the shared contracts (namespace meta, the config file's classes)"},
	{From: "cli/report", Allow: with("cli/...", "governor/allotapi", "governor/ledger"),
		Why: "report renders the ledger's answer types (known exception: they belong in the API package)"},
	{From: "cli/audit", Allow: with("cli/...", "governor/allotapi", "governor/ledger"),
		Why: "audit renders the ledger's answer types (known exception: they belong in the API package)"},
	{From: "cli/sim", Allow: with("cli/...", "governor/sim/..."),
		Why: "allotctl sim runs the simulator in process"},
	{From: "cli/dev", Allow: with("cli/...", "internal/nomadagent", "device-plugin/accel", "device-plugin/inventory", "internal/pgtest"),
		Why: "allotctl dev starts a local Nomad with Allot's plugins and probes the devices; its HA mode starts a throwaway PostgreSQL for the shared ledger (known exception: pgtest is a test harness)"},
	{From: "contract/...", Allow: with(),
		Why: "a contract is neutral: it imports nothing of Allot, so every part may import it"},
	{From: "internal/...", Allow: with("internal/..."),
		Why: "shared infrastructure imports no part"},
	{From: "jobspecs", Allow: with(), Why: "examples only"},
	{From: "terraform", Allow: with(), Why: "examples only"},
	{From: "tools/gpucheck/...", Allow: with(), Why: "a probe the real-GPU check runs inside tasks; it imports nothing of Allot"},
	{From: "", Allow: with("cli/...", "governor/...", "device-plugin/...", "task-driver/..."),
		Why: "the module root holds no code"},
}

// with returns patterns plus the Contracts.
func with(patterns ...string) []string {
	return append(append([]string{}, patterns...), Contracts...)
}
