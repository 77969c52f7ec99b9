#!/bin/bash
# One-shot real-GPU check of nomad-device-accel (nvml) and ckpt's device
# isolation, on a machine with an NVIDIA GPU and driver, as root (the ckpt
# driver's chroot isolation needs it). Run from the repository root after
# tools/gpucheck/prepare.sh built .gpu/ (see tools/gpucheck/README.md).
# Results go to $OUT (default ./gpucheck-out); the last line says PASS or
# FAIL with the failed checks. Nomad binds 127.0.0.1 only.
OUT=${OUT:-$PWD/gpucheck-out}
mkdir -p "$OUT"
exec > >(tee $OUT/run.log) 2>&1
set -x
G=$PWD/.gpu; C=$PWD/tools/gpucheck
mkdir -p /tmp/g/plugins /tmp/g/ckpt /opt/gc
for f in nomad accel-probe; do xz -dc $G/$f.xz > /tmp/g/$f; chmod 755 /tmp/g/$f; done
for f in nomad-device-accel nomad-driver-ckpt; do xz -dc $G/$f.xz > /tmp/g/plugins/$f; chmod 755 /tmp/g/plugins/$f; done
xz -dc $G/devcheck.xz > /opt/gc/devcheck; chmod 755 /opt/gc/devcheck
uname -r; stat -fc %T /sys/fs/cgroup; id nobody; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
ldconfig -p | grep -i nvidia-ml || export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:$LD_LIBRARY_PATH
ls -la /dev/nvidia* /dev/nvidia-caps 2>&1
nvidia-smi --query-gpu=index,name,uuid,memory.total,pci.bus_id,compute_cap,driver_version,persistence_mode,mig.mode.current --format=csv > $OUT/smi.csv 2>&1; cat $OUT/smi.csv
nvidia-smi topo -m 2>&1 | head -20
nvidia-smi nvlink -s 2>&1 | head -5
# 1. probe, idle
time timeout 60 /tmp/g/accel-probe -backends nvml -stats 2 > $OUT/probe-idle.json 2> $OUT/probe-idle.err; echo "probe-idle rc=$?"
timeout 60 /tmp/g/accel-probe -backends detect -grouping island -stats 1 > $OUT/probe-detect.json 2>> $OUT/probe-idle.err; echo "probe-detect rc=$?"
# 2. probe, busy: a bf16 matmul loop holding ~20 GiB
cat > /tmp/g/load.py <<'PY'
import torch, time
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
hold = torch.empty(20 * 1024**3, dtype=torch.uint8, device="cuda")
print("load started", flush=True)
end = time.time() + 25
while time.time() < end:
    for _ in range(50):
        y = x @ x
    torch.cuda.synchronize()
print("load done", flush=True)
PY
python3 /tmp/g/load.py > $OUT/load.log 2>&1 &
LP=$!
for i in $(seq 1 120); do grep -q "load started" $OUT/load.log && break; sleep 0.5; done
nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw,temperature.gpu --format=csv
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
echo "load pid $LP"
timeout 60 /tmp/g/accel-probe -backends nvml -stats 3 > $OUT/probe-busy.json 2> $OUT/probe-busy.err; echo "probe-busy rc=$?"
wait $LP
# 3. real Nomad with the plugins
cp $C/agent.hcl /tmp/g/agent.hcl
/tmp/g/nomad agent -config /tmp/g/agent.hcl > $OUT/nomad.log 2>&1 &
NP=$!
export NOMAD_ADDR=http://127.0.0.1:4646
for i in $(seq 1 120); do /tmp/g/nomad node status -json 2>/dev/null | grep -q '"Status": "ready"' && break; sleep 0.5; done
for i in $(seq 1 60); do curl -s $NOMAD_ADDR/v1/nodes?resources=true | grep -q '"Name":"H200"' && break; sleep 0.5; done
NODE=$(/tmp/g/nomad node status -quiet | head -1)
/tmp/g/nomad node status -verbose $NODE > $OUT/node-status.txt 2>&1
curl -s $NOMAD_ADDR/v1/node/$NODE > $OUT/node.json
/tmp/g/nomad job run -detach $C/gpu.hcl
# the same task without the device request
sed -e 's/job "gpu"/job "nogpu"/' -e '/device "nvidia\/gpu"/,/}/d' -e 's/"20s"/"0s"/' $C/gpu.hcl > /tmp/g/nogpu.hcl
/tmp/g/nomad job run -detach /tmp/g/nogpu.hcl
for i in $(seq 1 120); do curl -s "$NOMAD_ADDR/v1/job/gpu/allocations" | grep -q '"ClientStatus":"running"' && break; sleep 0.5; done
GA=$(curl -s "$NOMAD_ADDR/v1/job/gpu/allocations" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["ID"])')
sleep 6
/tmp/g/nomad alloc status -stats $GA > $OUT/alloc-gpu-status.txt 2>&1
curl -s $NOMAD_ADDR/v1/client/allocation/$GA/stats > $OUT/alloc-gpu-stats.json
curl -s $NOMAD_ADDR/v1/client/stats > $OUT/client-stats.json
for j in gpu nogpu; do
  for i in $(seq 1 120); do curl -s "$NOMAD_ADDR/v1/job/$j/allocations" | grep -q '"ClientStatus":"\(complete\|failed\)"' && break; sleep 0.5; done
  A=$(curl -s "$NOMAD_ADDR/v1/job/$j/allocations" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["ID"])')
  echo "== $j $A"; /tmp/g/nomad alloc status $A | tail -15
  /tmp/g/nomad alloc logs $A t; /tmp/g/nomad alloc logs -stderr $A t
done 2>&1 | tee $OUT/jobs.txt
kill $NP; wait $NP
set +x
fail=""
grep -q '"Model": "' $OUT/probe-idle.json || fail="$fail probe-found-no-gpu"
grep -q '"errors"' $OUT/probe-idle.json && fail="$fail probe-errors"
python3 - $OUT/probe-busy.json <<'PY' || fail="$fail busy-stats"
import json, sys
r = json.load(open(sys.argv[1]))
last = r["stats"][-1][0]["InstanceStats"]
a = next(iter(last.values()))["Stats"]["Attributes"]
assert a["GPU utilization"].get("FloatNumeratorVal", 0) > 50, a["GPU utilization"]
assert a["Processes"]["IntNumeratorVal"] >= 1, a["Processes"]
assert a["Memory utilization"]["IntNumeratorVal"] > 20 * 1024, a["Memory utilization"]
PY
grep -q 'nvidia/gpu/' $OUT/node-status.txt || fail="$fail node-has-no-gpu"
gpu=$(sed -n '/^== gpu /,/^== nogpu /p' $OUT/jobs.txt)
echo "$gpu" | grep -q 'open /dev/nvidia0 .*err=<nil>' || fail="$fail gpu-task-cannot-open-its-gpu"
echo "$gpu" | grep -q 'open /dev/nvidiactl .*err=<nil>' || fail="$fail gpu-task-cannot-open-nvidiactl"
echo "$gpu" | grep -q 'uid=65534' || fail="$fail gpu-task-not-nobody"
echo "$gpu" | grep -q 'Checkpoint warning' && fail="$fail driver-warning"
sed -n '/^== nogpu /,$p' $OUT/jobs.txt | grep -q '^nodes $' || fail="$fail nogpu-task-sees-gpu-nodes"
cd $OUT && tar czf results.tgz probe-*.json probe-*.err smi.csv run.log jobs.txt node-status.txt alloc-gpu-status.txt load.log && rm -f probe-* smi.csv node.json client-stats.json
if [ -z "$fail" ]; then echo "gpucheck: PASS"; else echo "gpucheck: FAIL:$fail"; exit 1; fi
