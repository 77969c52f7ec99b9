"""Tests of allot_checkpoint.py; run by TestCheckpointHelper (helper_test.go)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import allot_checkpoint
from allot_checkpoint import Checkpointer, read_latest

HERE = os.path.dirname(os.path.abspath(__file__))


def request_stop():
    """Deliver the checkpoint signal to this process, as the driver does."""
    os.kill(os.getpid(), signal.SIGUSR1)


class CheckpointerTest(unittest.TestCase):
    """The driver reads LATEST just before it signals: a stop is answered
    only when LATEST is replaced after that read."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.previous = signal.getsignal(signal.SIGUSR1)
        self.addCleanup(signal.signal, signal.SIGUSR1, self.previous)
        self.ckpt = Checkpointer(directory=self.dir, signal_name="SIGUSR1", every=20)

    def save(self, ckpt, step, during=None):
        def write(path):
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"step": step}, f)
            if during:
                during()
        return ckpt.save(step, write)

    def latest_ino(self):
        return os.stat(os.path.join(self.dir, allot_checkpoint.LATEST)).st_ino

    def test_no_request_no_stop(self):
        self.save(self.ckpt, 20)
        self.assertFalse(self.ckpt.stop_now())

    def test_request_before_a_save_is_answered_by_it(self):
        request_stop()
        self.assertTrue(self.ckpt.should_save(7))
        self.save(self.ckpt, 7)
        answered = self.latest_ino()
        self.assertTrue(self.ckpt.stop_now())
        self.assertEqual(self.latest_ino(), answered, "LATEST replaced again without need")
        self.assertEqual(read_latest(self.dir)[1], 7)

    def test_request_after_a_periodic_save_replaces_latest_again(self):
        self.save(self.ckpt, 20)
        baseline = self.latest_ino()  # what the driver reads before signalling
        request_stop()
        self.assertTrue(self.ckpt.stop_now())
        self.assertNotEqual(self.latest_ino(), baseline, "the stop left LATEST as the driver read it")
        path, step = read_latest(self.dir)
        self.assertEqual(step, 20)
        self.assertTrue(os.path.exists(path))

    def test_request_during_a_periodic_save_replaces_latest_again(self):
        self.save(self.ckpt, 40, during=request_stop)
        baseline = self.latest_ino()  # the driver may read it after the save
        self.assertTrue(self.ckpt.stop_now())
        self.assertNotEqual(self.latest_ino(), baseline)
        self.assertEqual(read_latest(self.dir)[1], 40)

    def test_other_ranks_stop_after_the_same_save_and_leave_latest(self):
        os.environ["RANK"] = "1"
        self.addCleanup(os.environ.pop, "RANK")
        rank1 = Checkpointer(directory=self.dir, signal_name="SIGUSR1", every=20)
        self.save(rank1, 20, during=request_stop)
        self.assertFalse(os.path.exists(os.path.join(self.dir, allot_checkpoint.LATEST)))
        self.assertTrue(rank1.stop_now())
        self.assertFalse(os.path.exists(os.path.join(self.dir, allot_checkpoint.LATEST)))

    def test_periodic_only_when_due(self):
        self.assertFalse(self.ckpt.should_save(0))
        self.assertFalse(self.ckpt.should_save(19))
        self.assertTrue(self.ckpt.should_save(20))


def version(path):
    """What the driver compares LATEST by: content and inode."""
    with open(path, encoding="utf-8") as f:
        return f.read(), os.fstat(f.fileno()).st_ino


class ToyTrainTest(unittest.TestCase):
    def test_stops_after_replacing_latest(self):
        """toy_train.py saves every step; the signal lands beside a save."""
        directory = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        env = dict(os.environ, ALLOT_CHECKPOINT_DIR=directory, ALLOT_CHECKPOINT_SIGNAL="SIGUSR1")
        proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "toy_train.py"), "--steps", "1000000",
             "--save-every", "1", "--step-time", "0.001"],
            env=env, stdout=subprocess.PIPE, text=True)
        try:
            latest = os.path.join(directory, allot_checkpoint.LATEST)
            deadline = time.monotonic() + 30
            while not os.path.exists(latest):
                self.assertLess(time.monotonic(), deadline, "no LATEST within 30 s")
                time.sleep(0.01)
            before = version(latest)
            proc.send_signal(signal.SIGUSR1)
            out, _ = proc.communicate(timeout=30)
        finally:
            proc.kill()
        self.assertEqual(proc.returncode, 0, out)
        self.assertIn("stopping as requested", out)
        # As the driver judges: a later step, or the same one in a new file.
        # (Several replacements may reuse the first file's inode number,
        # but then the step moved on.)
        self.assertNotEqual(version(latest), before, "LATEST was not replaced after the signal")


if __name__ == "__main__":
    unittest.main()
