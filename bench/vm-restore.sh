#!/usr/bin/env bash
# What a VM snapshot would save the VM suite: the base image's cold boot to ssh against a restore
# (qemu `loadvm`) of a snapshot taken once the guest answered ssh, on one qcow2 overlay, with the
# suite's machine (test/e2e/vm.ts: TCG, 2 vCPUs, 1536 MiB, the kernel booted directly, the
# management and uplink NICs). Prints the median of BENCH_RUNS (default 5) of each, their ratio,
# and how far the restored guest's clock is behind the host's (the snapshot's age, which a scenario
# would have to correct before anything reads the time).
# Usage: flock /tmp/sno-vm.lock bash bench/vm-restore.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${BENCH_RUNS:-5}
BASE=$(bash test/e2e/build-base.sh | tail -n 1)
WORK=$(mktemp -d)
trap 'kill "$(cat "$WORK/qemu.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$WORK"' EXIT
PORT=2299
qemu-img create -q -f qcow2 -F raw -b "$BASE/base.raw" "$WORK/disk.qcow2"
args=(-nodefaults -no-user-config -vga none -display none -accel tcg -cpu max -smp 2 -m 1536
  -kernel "$BASE/vmlinux" -initrd "$BASE/initrd.img" -append "root=/dev/vda rw console=ttyS0 panic=-1"
  -drive "file=$WORK/disk.qcow2,format=qcow2,if=none,id=root" -device virtio-blk-pci,drive=root,addr=0x5
  -netdev "user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:$PORT-:22" -device virtio-net-pci,netdev=mgmt,addr=0x3
  -netdev user,id=uplink,restrict=on,net=192.0.2.0/24 -device virtio-net-pci,netdev=uplink,addr=0x4
  -serial "file:$WORK/serial.log" -monitor "unix:$WORK/monitor.sock,server=on,wait=off"
  -pidfile "$WORK/qemu.pid" -daemonize)

ms() { echo $(($(date +%s%N) / 1000000)); }
guest() {
  ssh -i "$BASE/id_ed25519" -p "$PORT" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o ConnectTimeout=2 -o BatchMode=yes -o LogLevel=ERROR root@127.0.0.1 "$@"
}
# starts qemu (extra arguments appended) and prints the milliseconds until sshd answers
start() {
  local t0
  t0=$(ms)
  qemu-system-x86_64 "${args[@]}" "$@"
  until guest true 2>/dev/null; do sleep 0.2; done
  echo $(($(ms) - t0))
}
# one command to qemu's human monitor, answered when its prompt comes back
monitor() {
  python3 - "$WORK/monitor.sock" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.recv(4096)
s.sendall((sys.argv[2] + "\n").encode())
buf = b""
while not buf.rstrip().endswith(b"(qemu)"):
    chunk = s.recv(4096)
    if not chunk:
        break
    buf += chunk
EOF
}
stop() {
  local pid
  pid=$(cat "$WORK/qemu.pid")
  monitor quit
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

start >/dev/null
monitor 'savevm answered'
stop
cold=() restored=() behind=()
for _ in $(seq "$RUNS"); do
  cold+=("$(start)")
  stop
  restored+=("$(start -loadvm answered)")
  behind+=("$(($(date +%s) - $(guest date +%s)))")
  stop
done
c=$(printf '%s\n' "${cold[@]}" | median)
r=$(printf '%s\n' "${restored[@]}" | median)
printf 'cold boot to ssh: median %s ms (%s)\n' "$c" "${cold[*]}"
printf 'snapshot restore to ssh: median %s ms (%s)\n' "$r" "${restored[*]}"
printf 'restore / cold boot: %s\n' "$(awk -v r="$r" -v c="$c" 'BEGIN {printf "%.3f", r / c}')"
printf "restored guest's clock behind the host's: %s s (the snapshot's age at each restore)\n" "${behind[*]}"
