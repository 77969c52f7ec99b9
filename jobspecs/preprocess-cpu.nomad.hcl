# CPU-only data preprocessing: no device block, so it never holds an
# accelerator. It is kept off the GPU nodes by node pool and counts against
# the tenant's cpu and memory quota only (allot.quota.cpu, allot.quota.memory).
#
#   nomad job run -var node_pool=cpu -var parts=16 jobspecs/preprocess-cpu.nomad.hcl

variable "namespace" {
  type    = string
  default = "default"
}

variable "node_pool" {
  type        = string
  default     = "default"
  description = "pool of CPU-only nodes"
}

variable "parts" {
  type    = number
  default = 4
}

variable "command" {
  type    = string
  default = "python3"
}

variable "args" {
  type        = list(string)
  default     = null
  description = "arguments; default runs preprocess.py on part $PART of $PARTS"
}

variable "cpu" {
  type    = number
  default = 1000
}

variable "memory" {
  type    = number
  default = 2048
}

job "preprocess-cpu" {
  namespace = var.namespace
  type      = "batch"
  node_pool = var.node_pool

  meta = {
    "allot.class" = "standard"
    "allot.gang"  = "false"
  }

  group "part" {
    count = var.parts

    task "preprocess" {
      driver = "raw_exec"

      env {
        PART  = "${NOMAD_ALLOC_INDEX}"
        PARTS = var.parts
      }

      config {
        command = var.command
        args    = var.args != null ? var.args : ["preprocess.py", "--part", "${PART}", "--parts", "${PARTS}"]
      }

      resources {
        cpu    = var.cpu
        memory = var.memory
      }
    }
  }
}
