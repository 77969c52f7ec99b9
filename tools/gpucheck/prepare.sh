#!/bin/sh
# Builds the real-GPU check's bundle into .gpu/ (ignored by git): the
# Nomad agent, the two plugins, accel-probe and devcheck, stripped and
# xz-compressed so that the bundle travels to a GPU machine in ~35 MB.
# Run from the repository root where Go is available: sh tools/gpucheck/prepare.sh
set -eu
make bin/nomad bin/nomad-device-accel bin/nomad-driver-ckpt
mkdir -p .gpu
go build -o .gpu/accel-probe ./device-plugin/cmd/accel-probe
CGO_ENABLED=0 go build -o .gpu/devcheck ./tools/gpucheck/devcheck
for f in nomad nomad-device-accel nomad-driver-ckpt; do cp "bin/$f" ".gpu/$f"; done
cd .gpu
strip nomad nomad-device-accel nomad-driver-ckpt accel-probe devcheck
xz -T0 -6 -f nomad nomad-device-accel nomad-driver-ckpt accel-probe devcheck
ls -l
