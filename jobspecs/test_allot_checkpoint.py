"""Tests of allot_checkpoint.py; run by TestCheckpointHelper (jobspecs_test.go)."""

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
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.previous = signal.getsignal(signal.SIGUSR1)
        self.ckpt = Checkpointer(directory=self.dir, signal_name="SIGUSR1", every=20)

    def tearDown(self):
        signal.signal(signal.SIGUSR1, self.previous)

    def save(self, step, during=None):
        def write(path):
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"step": step}, f)
            if during:
                during()
        return self.ckpt.save(step, write)

    def test_request_before_a_save_is_answered_by_it(self):
        request_stop()
        self.assertTrue(self.ckpt.should_save(7))
        self.save(7)
        self.assertTrue(self.ckpt.stop_saved)
        self.assertEqual(read_latest(self.dir)[1], 7)
        self.assertFalse(self.ckpt.should_save(8))

    def test_request_after_a_periodic_save_needs_another(self):
        self.assertTrue(self.ckpt.should_save(20))
        self.save(20)
        request_stop()  # LATEST already names step 20 when the driver reads it
        self.assertTrue(self.ckpt.stop_requested)
        self.assertFalse(self.ckpt.stop_saved)
        self.assertTrue(self.ckpt.should_save(21))
        self.save(21)
        self.assertTrue(self.ckpt.stop_saved)
        self.assertEqual(read_latest(self.dir)[1], 21)

    def test_request_during_a_periodic_save_needs_another(self):
        self.save(40, during=request_stop)
        self.assertFalse(self.ckpt.stop_saved)
        self.assertTrue(self.ckpt.should_save(41))

    def test_periodic_only_when_due(self):
        self.assertFalse(self.ckpt.should_save(0))
        self.assertFalse(self.ckpt.should_save(19))
        self.assertTrue(self.ckpt.should_save(20))


class ToyTrainTest(unittest.TestCase):
    def test_stops_only_after_replacing_latest(self):
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
            before = os.stat(latest)
            proc.send_signal(signal.SIGUSR1)
            out, _ = proc.communicate(timeout=30)
        finally:
            proc.kill()
        self.assertEqual(proc.returncode, 0, out)
        self.assertIn("stopping as requested", out)
        self.assertNotEqual(os.stat(latest).st_ino, before.st_ino, "LATEST was not replaced after the signal")


if __name__ == "__main__":
    unittest.main()
