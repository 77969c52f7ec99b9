package testcluster

// CkptUnisolated holds the ckpt driver config lines for e2e tests whose
// tasks cannot run isolated: GPUs of an inventory without device_dir have
// no device nodes on the test host (the isolating executor refuses a
// reserved /dev/nvidia<i> that does not exist), and payloads built into
// 0700 temp dirs are out of reach of the chroot and of nobody. It runs
// tasks as the driver did before isolation: the universal executor, as
// root. Tests of the isolation itself use the defaults
// (task-driver/e2e).
const CkptUnisolated = "isolation    = \"none\"\ndefault_user = \"root\"\nallow_root   = true"
