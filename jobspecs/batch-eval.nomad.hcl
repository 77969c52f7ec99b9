# Batch evaluation in the `low` class: `shards` independent allocations, one
# GPU each, each evaluating one slice of the data set. allot.gang = "false"
# lets the governor admit shards one by one as GPUs free up, and `low` jobs
# are preempted before standard work. A finished shard is not rerun.
#
#   nomad job run -var shards=8 jobspecs/batch-eval.nomad.hcl

variable "namespace" {
  type    = string
  default = "default"
}

variable "shards" {
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
  description = "arguments; default runs eval.py on shard $NOMAD_ALLOC_INDEX of $SHARDS"
}

variable "cpu" {
  type    = number
  default = 500
}

variable "memory" {
  type    = number
  default = 1024
}

job "batch-eval" {
  namespace = var.namespace
  type      = "batch"

  meta = {
    "allot.class" = "low"
    "allot.gang"  = "false"
  }

  group "shard" {
    count = var.shards

    restart {
      attempts = 2
      delay    = "10s"
      mode     = "fail"
    }

    task "eval" {
      driver = "raw_exec"

      env {
        SHARD  = "${NOMAD_ALLOC_INDEX}"
        SHARDS = var.shards
      }

      config {
        command = var.command
        args    = var.args != null ? var.args : ["eval.py", "--shard", "${SHARD}", "--shards", "${SHARDS}"]
      }

      resources {
        cpu    = var.cpu
        memory = var.memory

        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
