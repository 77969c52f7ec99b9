# Single-GPU training that checkpoints before every stop and resumes where it
# stopped: the `ckpt` task driver sends SIGUSR1, waits for the trainer to
# write its checkpoint, then stops it. A preempted or held job comes back at
# the same alloc index and finds $ALLOT_RESUME_FROM.
#
#   nomad job run -var script_dir=$PWD/jobspecs jobspecs/train-gpu.nomad.hcl
#
# Needs nomad-device-accel (or nomad-device-nvidia) and nomad-driver-ckpt on
# the client; the client's max_kill_timeout must allow kill_timeout.

variable "namespace" {
  type        = string
  default     = "default"
  description = "tenant namespace the job runs in"
}

variable "class" {
  type        = string
  default     = "standard"
  description = "Allot priority class (allot.class)"
}

variable "gpu_model" {
  type        = string
  default     = "H200"
  description = "GPU model (device attribute model)"
}

variable "script_dir" {
  type        = string
  default     = "/opt/allot/jobspecs"
  description = "directory holding toy_train.py and allot_checkpoint.py on the client"
}

variable "command" {
  type    = string
  default = "python3"
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

variable "cpu" {
  type        = number
  default     = 1000
  description = "MHz; a real trainer wants several cores"
}

variable "memory" {
  type        = number
  default     = 2048
  description = "MiB"
}

job "train-gpu" {
  namespace = var.namespace
  type      = "batch"

  meta = {
    "allot.class" = var.class
  }

  group "train" {
    # Replacements must keep the alloc index (and so the checkpoint
    # directory): no reschedule to another index, restart in place once.
    reschedule {
      attempts  = 0
      unlimited = false
    }

    restart {
      attempts = 1
      mode     = "fail"
    }

    task "train" {
      driver       = "ckpt"
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
        cpu    = var.cpu
        memory = var.memory

        device "nvidia/gpu" {
          count = 1

          constraint {
            attribute = "${device.attr.model}"
            value     = var.gpu_model
          }
        }
      }
    }
  }
}
