"""Checkpoint helper for jobs run by Allot's ckpt task driver.

The driver sets three environment variables:

  ALLOT_CHECKPOINT_DIR     directory for checkpoints (survives the allocation)
  ALLOT_CHECKPOINT_SIGNAL  signal sent when the job must stop (e.g. SIGUSR1)
  ALLOT_RESUME_FROM        path of the newest checkpoint, when there is one

Usage in a training loop:

    ckpt = Checkpointer()
    state = ckpt.resume(load=torch.load) or fresh_state()
    for step in range(state["step"], total):
        train_one_step(state)
        if ckpt.should_save(step):          # periodic or requested
            ckpt.save(step, lambda path: torch.save(state, path))
            if ckpt.stop_now():
                sys.exit(0)                  # the driver is waiting for us

`save` writes the checkpoint to a temporary name, renames it into place and
then atomically replaces LATEST (first line: path, second line: step), which
is what the driver waits for.

Ask `stop_now()` right after `save`, not `stop_requested`: the signal can
arrive while a periodic save is finishing, or just after it replaced LATEST.
The driver reads LATEST just before it signals, so that save alone would not
count as the answer, though it holds the current state; `stop_now()` then has
rank 0 replace LATEST once more (same checkpoint, a new file) before it says
to stop. Every rank that saw the signal stops after the same save, as
distributed training needs.

Launchers that do not handle the checkpoint signal themselves (torchrun,
shell scripts) would die of it, because the driver signals the whole process
group. Start them through this file instead:

    python3 allot_checkpoint.py launch torchrun --nproc-per-node 8 train.py

which ignores the signal in the launcher (and in children that do not
install their own handler, as Checkpointer does) and then execs it.
"""

import os
import signal
import sys
import tempfile

__all__ = ["Checkpointer", "read_latest", "write_latest"]

LATEST = "LATEST"


def read_latest(directory):
    """Return (path, step) from directory/LATEST, or (None, None)."""
    try:
        with open(os.path.join(directory, LATEST), encoding="utf-8") as f:
            lines = [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return None, None
    if not lines:
        return None, None
    path = lines[0]
    if not os.path.isabs(path):
        path = os.path.join(directory, path)
    step = int(lines[1]) if len(lines) > 1 else None
    return path, step


def _replace_atomically(path, data):
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_latest(directory, path, step=None):
    """Atomically point directory/LATEST at path (and step)."""
    data = path + "\n" + ("" if step is None else "%d\n" % step)
    _replace_atomically(os.path.join(directory, LATEST), data)


class Checkpointer:
    """Signal handling, atomic saves and resume for one training process.

    Only the process with rank 0 (RANK env, default 0) writes LATEST; every
    rank sees stop_requested, because the driver signals the whole process
    group.
    """

    def __init__(self, directory=None, signal_name=None, every=None):
        self.directory = directory or os.environ.get("ALLOT_CHECKPOINT_DIR") or "./checkpoints"
        os.makedirs(self.directory, exist_ok=True)
        self.every = every
        self.stop_requested = False
        self._answered = False  # the last save began after the request
        self._last = None       # (path, step) of the last save
        self.rank = int(os.environ.get("RANK", "0"))
        name = signal_name or os.environ.get("ALLOT_CHECKPOINT_SIGNAL") or "SIGUSR1"
        self.signal = getattr(signal, name if name.startswith("SIG") else "SIG" + name)
        signal.signal(self.signal, self._on_signal)

    def _on_signal(self, signum, frame):  # pylint: disable=unused-argument
        # Only set a flag: the loop saves at the next step boundary, where
        # the model state is consistent.
        self.stop_requested = True

    def resume(self, load):
        """Load the newest checkpoint with load(path); None when there is none."""
        path = os.environ.get("ALLOT_RESUME_FROM")
        if not path:
            path, _ = read_latest(self.directory)
        if not path:
            return None
        return load(path)

    def should_save(self, step):
        """True when a save is requested or periodic saving is due."""
        if self.stop_requested:
            return True
        return bool(self.every) and step > 0 and step % self.every == 0

    def save(self, step, write):
        """Call write(path) for a new checkpoint file, then replace LATEST."""
        self._answered = self.stop_requested
        final = os.path.join(self.directory, "step-%09d.ckpt" % step)
        tmp = final + ".partial"
        write(tmp)
        os.replace(tmp, final)
        if self.rank == 0:
            write_latest(self.directory, final, step)
        self._last = (final, step)
        return final

    def stop_now(self):
        """True when a stop was requested: exit after the save just made.

        Call it right after save(). When the request arrived during or
        after that save, rank 0 replaces LATEST again (the same checkpoint,
        a new file), since the driver read LATEST just before signalling.
        """
        if not self.stop_requested:
            return False
        if not self._answered and self._last is not None and self.rank == 0:
            write_latest(self.directory, *self._last)
        self._answered = True
        return True


def _signal_from_env():
    name = os.environ.get("ALLOT_CHECKPOINT_SIGNAL") or "SIGUSR1"
    return getattr(signal, name if name.startswith("SIG") else "SIG" + name)


def launch(argv):
    """Ignore the checkpoint signal, then exec argv (never returns)."""
    if not argv:
        sys.exit("usage: allot_checkpoint.py launch COMMAND [ARG...]")
    signal.signal(_signal_from_env(), signal.SIG_IGN)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "launch":
        launch(sys.argv[2:])
    sys.exit("usage: allot_checkpoint.py launch COMMAND [ARG...]")
