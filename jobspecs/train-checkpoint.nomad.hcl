# A training job that checkpoints before every stop (preemption, `nomad alloc
# stop`, job stop, drain, governor hold) and resumes where it stopped.
# Needs the ckpt task driver (nomad-driver-ckpt) on the client, with
#   plugin "nomad-driver-ckpt" { config { checkpoint_root = "/shared/checkpoints" } }
# and a client max_kill_timeout of at least kill_timeout (see docs/task-driver.md).
#
#   nomad job run -var script_dir=$PWD/jobspecs jobspecs/train-checkpoint.nomad.hcl
#
# The e2e tests run this same file with the Go toy trainer:
#   -var command=/path/to/toytrainer -var 'args=["-save-every","5"]'

variable "command" {
  type        = string
  default     = "python3"
  description = "program to run"
}

variable "script_dir" {
  type        = string
  default     = "/opt/allot/jobspecs"
  description = "directory holding toy_train.py and allot_checkpoint.py on the client"
}

variable "args" {
  type        = list(string)
  default     = null
  description = "arguments; default runs the Python toy trainer"
}

variable "checkpoint_timeout" {
  type    = string
  default = "120s"
}

variable "kill_timeout" {
  type    = string
  default = "150s"
}

variable "priority" {
  type    = number
  default = 50
}

job "train-checkpoint" {
  type     = "batch"
  priority = var.priority

  meta = {
    "allot.class" = "standard"
  }

  group "train" {
    # A stopped or preempted allocation is replaced at the same alloc index,
    # so its replacement finds the checkpoint directory and resumes.
    reschedule {
      attempts  = 0
      unlimited = false
    }

    restart {
      attempts = 1
      mode     = "fail"
    }

    task "train" {
      driver = "ckpt"

      # Must exceed checkpoint.timeout, and the client's max_kill_timeout
      # must allow it (Nomad caps kill_timeout at max_kill_timeout).
      kill_timeout = var.kill_timeout

      config {
        command = var.command
        args    = var.args != null ? var.args : ["${var.script_dir}/toy_train.py", "--steps", "100000", "--save-every", "500"]

        checkpoint {
          signal  = "SIGUSR1"
          timeout = var.checkpoint_timeout
        }
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
