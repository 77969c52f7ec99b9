#!/usr/bin/env python3
"""A toy training loop that checkpoints the way the ckpt driver expects.

It "trains" by counting steps. Run it under the ckpt driver (see
train-checkpoint.nomad.hcl) or by hand:

    ALLOT_CHECKPOINT_DIR=/tmp/ck python3 toy_train.py --steps 1000 --save-every 100
    # in another shell: kill -USR1 <pid>   -> saves, prints, exits 0
    # run it again: it resumes from the saved step
"""

import argparse
import json
import sys
import time

from allot_checkpoint import Checkpointer


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--save-every", type=int, default=0)
    parser.add_argument("--step-time", type=float, default=0.01, help="seconds per step")
    args = parser.parse_args()

    ckpt = Checkpointer(every=args.save_every)

    def load(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    state = ckpt.resume(load) or {"step": 0, "loss": 1.0}
    print("toy_train: starting at step %d" % state["step"], flush=True)

    def write(path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(state, f)

    while state["step"] < args.steps:
        time.sleep(args.step_time)
        state["step"] += 1
        state["loss"] *= 0.999
        if ckpt.should_save(state["step"]):
            path = ckpt.save(state["step"], write)
            print("toy_train: saved step %d to %s" % (state["step"], path), flush=True)
            if ckpt.stop_now():
                print("toy_train: stopping as requested", flush=True)
                return 0
    print("toy_train: done at step %d" % state["step"], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
