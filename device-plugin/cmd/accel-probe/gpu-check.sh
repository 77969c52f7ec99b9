#!/bin/sh
# One-shot check of the nvml backend on a machine with a real NVIDIA GPU.
# Build the probe first where Go is available:
#   go build -o bin/accel-probe ./device-plugin/cmd/accel-probe
# then run this script from the repository root on the GPU machine. Results
# go to $OUT (or the current directory): the probe's JSON and log, plus
# nvidia-smi's own view to compare against.
set -u
out=${OUT:-.}
probe=${PROBE:-bin/accel-probe}
nvidia-smi -L > "$out/nvidia-smi-L.txt" 2>&1
nvidia-smi topo -m > "$out/nvidia-smi-topo.txt" 2>&1
nvidia-smi --query-gpu=uuid,name,memory.total,memory.used,utilization.gpu,power.draw,power.limit,temperature.gpu,pci.bus_id,driver_version --format=csv > "$out/nvidia-smi-query.csv" 2>&1
nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv > "$out/nvidia-smi-apps.csv" 2>&1
"$probe" -backends nvml -grouping none -stats 3 > "$out/probe-nvml.json" 2> "$out/probe-nvml.log"
rc=$?
"$probe" -backends nvml -grouping island -stats 1 > "$out/probe-nvml-island.json" 2>> "$out/probe-nvml.log"
echo "accel-probe exit status: $rc"
head -c 4000 "$out/probe-nvml.json"
exit $rc
