#!/usr/bin/env bash
# Builds the base image of the VM end-to-end suite: a Debian bookworm node with systemd, dbus, udev,
# NetworkManager, sshd, dnsmasq (disabled) and dig, the host's node binary, a user `core`, and a
# stand-in kubelet.service that nothing starts (the agent starts it over D-Bus).
#
# Output, in ${SNO_RELOCATE_VM_CACHE:-/var/cache/sno-relocate-vm}/<key>/, key = sha256 of this script
# and `node --version`:
#   base.raw     2 GiB sparse ext4 root filesystem (no partition table; the guest sees it as /dev/vda)
#   vmlinux      uncompressed kernel, booted through PVH (much faster than a bzImage under TCG)
#   initrd.img   small initramfs (virtio_pci, virtio_blk, ext4 only)
#   id_ed25519   ssh key for root@guest (id_ed25519.pub is in /root/.ssh/authorized_keys)
#   kernel-version, manifest.txt (installed packages)
#   .complete    written last; a directory without it is not a cache hit and is rebuilt
#
# Also installs the host tools the suite needs (qemu, mmdebstrap, dosfstools, mtools, e2fsprogs, xorriso) when
# they are missing, so it is the one "make the VM environment ready" entry point. Progress goes to
# stderr; the last line on stdout is the cache directory.
#
# Guest layout worth knowing:
#   ens3  management NIC, 10.0.2.15/24 static via systemd-networkd, no gateway, NOT managed by
#         NetworkManager; sshd on it is reached through qemu's hostfwd on 127.0.0.1.
#   ens4  uplink NIC, managed by NetworkManager with the factory profile `uplink`: DHCP plus a static
#         default route via 192.0.2.1. Its qemu user network (see vm.ts) is 192.0.2.0/24, gateway
#         192.0.2.1 (answers ping), first lease 192.0.2.100. A restricted qemu network hands out no
#         router and no DNS server over DHCP, hence the static route; there is no DNS.
#   journald Storage=persistent, SyncIntervalSec=1s, so a power cut loses at most about a second.
set -euo pipefail

SCRIPT=$(readlink -f "$0")
CACHE_ROOT=${SNO_RELOCATE_VM_CACHE:-/var/cache/sno-relocate-vm}
MIRROR=${SNO_RELOCATE_VM_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${SNO_RELOCATE_VM_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
IMAGE_SIZE=2G

log() { printf '[build-base %4ss] %s\n' "$SECONDS" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# --- host tools ---------------------------------------------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v qemu-img >/dev/null || need+=(qemu-utils)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v mkfs.vfat >/dev/null || need+=(dosfstools)
command -v mcopy >/dev/null || need+=(mtools)
{ command -v mkfs.ext4 && command -v debugfs; } >/dev/null || need+=(e2fsprogs)
command -v ssh >/dev/null || need+=(openssh-client)
command -v xz >/dev/null || need+=(xz-utils)
command -v xorriso >/dev/null || need+=(xorriso)   # ISO 9660 sticks: 'relocation-config' is too long for ext4 and FAT
command -v chronyd >/dev/null || need+=(chrony)     # the test network's time server, run unprivileged with -x
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "need root to install host packages: ${need[*]}"
  log "installing host packages: ${need[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    qemu-system-x86 qemu-utils mmdebstrap dosfstools mtools e2fsprogs openssh-client xz-utils xorriso chrony >&2
  log "host packages installed"
fi

# --- cache --------------------------------------------------------------------------------------
command -v node >/dev/null || die "node is not on PATH (it is copied into the image)"
NODE_BIN=$(readlink -f "$(command -v node)")
KEY=$({ cat "$SCRIPT"; node --version; } | sha256sum | cut -c1-64)
OUT=$CACHE_ROOT/$KEY
if [ -f "$OUT/.complete" ]; then
  touch "$OUT/.complete" 2>/dev/null || true   # last use, for the pruning of stale images below
  log "cache hit: $OUT"
  echo "$OUT"
  exit 0
fi

[ "$(id -u)" = 0 ] || die "building the image needs root (mmdebstrap, chroot, file ownership)"
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.lock-$KEY"
log "waiting for the build lock"
flock 9
if [ -f "$OUT/.complete" ]; then   # built by a concurrent run while we waited
  log "cache hit: $OUT"
  echo "$OUT"
  exit 0
fi
log "cache miss: building $OUT"
rm -rf "$OUT"
mkdir -p "$OUT"
WORK=$(mktemp -d "$CACHE_ROOT/.work-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/root

# --- mmdebstrap ---------------------------------------------------------------------------------
# The essential hook runs before the kernel package is installed, so its first initramfs build
# already uses MODULES=list and our module hook (6 MB initrd instead of 35 MB). These are new files,
# not dpkg conffiles, so there is no prompt.
cat > "$WORK/essential-hook" <<'HOOK'
#!/bin/sh
set -e
mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/etc/initramfs-tools/hooks"
echo 'MODULES=list' > "$1/etc/initramfs-tools/conf.d/sno-relocate-vm.conf"
cat > "$1/etc/initramfs-tools/hooks/sno-relocate-vm" <<'EOF'
#!/bin/sh
PREREQ=""
prereqs() { echo "$PREREQ"; }
case "$1" in prereqs) prereqs; exit 0;; esac
. /usr/share/initramfs-tools/hook-functions
manual_add_modules virtio_pci virtio_blk ext4
EOF
chmod 0755 "$1/etc/initramfs-tools/hooks/sno-relocate-vm"
HOOK
chmod 0755 "$WORK/essential-hook"

PACKAGES=systemd,systemd-sysv,dbus,udev,network-manager,iproute2,linux-image-amd64,kmod,e2fsprogs
PACKAGES=$PACKAGES,dosfstools,openssh-server,procps,iputils-ping,util-linux
# dnsmasq: the single-node DNS of OpenShift's dnsmasq configuration; dig to query it
PACKAGES=$PACKAGES,dnsmasq,bind9-dnsutils
# chrony: the node's NTP client, as on RHCOS; off until a site's chrony config starts it
PACKAGES=$PACKAGES,chrony

log "mmdebstrap bookworm (minbase + $PACKAGES)"
mmdebstrap --variant=minbase --mode=root --quiet \
  --include="$PACKAGES" \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --essential-hook="$WORK/essential-hook" \
  bookworm "$ROOT" \
  "deb $MIRROR bookworm main" \
  "deb $MIRROR bookworm-updates main" \
  "deb $SECURITY_MIRROR bookworm-security main" >&2
log "mmdebstrap done ($(du -sm "$ROOT" | cut -f1) MB)"

KVER=$(basename "$(ls -d "$ROOT"/usr/lib/modules/*/ | head -n 1)")
[ -n "$KVER" ] && [ -f "$ROOT/boot/vmlinuz-$KVER" ] || die "no kernel found in the image"
log "kernel $KVER"

# --- trim kernel modules ------------------------------------------------------------------------
# Keep: virtio, USB (xhci, usb-storage, uas), SCSI disk, ext4/vfat/nls, bridge/bonding/vlan/etc.
# sh/dash has no brace expansion, hence the loop.
M=$ROOT/usr/lib/modules/$KVER/kernel
for d in \
  drivers/gpu drivers/media drivers/net/wireless drivers/net/ethernet drivers/net/can drivers/net/wwan \
  drivers/net/ieee802154 drivers/net/hamradio drivers/net/usb drivers/infiniband drivers/staging \
  drivers/isdn drivers/bluetooth drivers/iio drivers/nfc drivers/target drivers/mtd drivers/hwmon \
  drivers/input/touchscreen drivers/input/joystick drivers/input/misc drivers/usb/gadget \
  drivers/usb/serial drivers/usb/misc drivers/crypto drivers/misc drivers/comedi drivers/thunderbolt \
  drivers/scsi/lpfc drivers/scsi/qla2xxx drivers/scsi/qla4xxx drivers/scsi/megaraid drivers/scsi/mpt3sas \
  drivers/scsi/bfa drivers/scsi/be2iscsi drivers/scsi/bnx2fc drivers/scsi/bnx2i drivers/scsi/csiostor \
  drivers/scsi/cxgbi drivers/scsi/fnic drivers/scsi/hisi_sas drivers/scsi/isci drivers/scsi/mpi3mr \
  drivers/scsi/pm8001 drivers/scsi/smartpqi drivers/scsi/aacraid drivers/scsi/arcmsr drivers/scsi/aic7xxx \
  drivers/scsi/qedi drivers/scsi/qedf drivers/scsi/elx drivers/scsi/fcoe drivers/scsi/libfc \
  sound net/wireless net/mac80211 net/bluetooth net/nfc net/6lowpan net/ieee802154 \
  fs/btrfs fs/xfs fs/ocfs2 fs/gfs2 fs/nfs fs/nfsd fs/ceph fs/smb fs/cifs fs/f2fs fs/jfs fs/ubifs \
  fs/reiserfs fs/nilfs2 fs/ntfs3 fs/dlm fs/afs fs/orangefs fs/coda fs/ubifs; do
  rm -rf "${M:?}/$d"
done
chroot "$ROOT" depmod -a "$KVER"
log "modules trimmed to $(du -sm "$ROOT/usr/lib/modules" | cut -f1) MB"

# --- configuration ------------------------------------------------------------------------------
# Fixed machine id: no first-boot logic (presets, machine-id commit) in any test boot.
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$ROOT/etc/machine-id"
echo >> "$ROOT/etc/machine-id"
echo sno-factory > "$ROOT/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tsno-factory\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$ROOT/etc/hosts"
echo '/dev/vda / ext4 rw,relatime 0 1' > "$ROOT/etc/fstab"

# journald: persistent, synced every second (a power cut otherwise loses the whole killed boot)
mkdir -p "$ROOT/etc/systemd/journald.conf.d" "$ROOT/var/log/journal"
printf '[Journal]\nStorage=persistent\nSyncIntervalSec=1s\n' > "$ROOT/etc/systemd/journald.conf.d/sno-relocate-vm.conf"

# sshd: root by key only; no PAM (PAM starts logind sessions and user@0.service, slow under TCG)
ssh-keygen -q -t ed25519 -N '' -C sno-relocate-vm -f "$OUT/id_ed25519"
install -d -m 0700 "$ROOT/root/.ssh"
install -m 0600 "$OUT/id_ed25519.pub" "$ROOT/root/.ssh/authorized_keys"
cat > "$ROOT/etc/ssh/sshd_config.d/sno-relocate-vm.conf" <<'EOF'
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
EOF

# user core; its password field is '*' (not '!'), because without PAM sshd refuses locked accounts
chroot "$ROOT" useradd --create-home --uid 1000 --shell /bin/bash core
chroot "$ROOT" usermod -p '*' core

# management NIC: systemd-networkd, static, no gateway; networkd must leave NetworkManager's
# routes and rules on other links alone
mkdir -p "$ROOT/etc/systemd/network" "$ROOT/etc/systemd/networkd.conf.d"
printf '[Match]\nName=ens3\n\n[Network]\nAddress=10.0.2.15/24\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
  > "$ROOT/etc/systemd/network/10-mgmt.network"
printf '[Network]\nManageForeignRoutes=no\nManageForeignRoutingPolicyRules=no\n' \
  > "$ROOT/etc/systemd/networkd.conf.d/sno-relocate-vm.conf"
chroot "$ROOT" systemctl enable -q systemd-networkd.service
chroot "$ROOT" systemctl disable -q systemd-networkd-wait-online.service 2>/dev/null || true

# NetworkManager: owns everything but ens3; no automatic "Wired connection" profiles
cat > "$ROOT/etc/NetworkManager/conf.d/10-sno-relocate-vm.conf" <<'EOF'
[main]
no-auto-default=*

[keyfile]
unmanaged-devices=interface-name:ens3
EOF
cat > "$ROOT/etc/NetworkManager/system-connections/uplink.nmconnection" <<'EOF'
[connection]
id=uplink
uuid=6f1c8a2e-3b0d-4c57-9a51-2f7c0e4b9d10
type=ethernet
interface-name=ens4
autoconnect=true

[ethernet]

[ipv4]
method=auto
route1=0.0.0.0/0,192.0.2.1

[ipv6]
method=disabled
EOF
chmod 0600 "$ROOT/etc/NetworkManager/system-connections/uplink.nmconnection"

# stand-in kubelet: disabled as the factory leaves it, with the [Install] section of the real unit
# (the agent's gate enables it; a unit without one would stay "static", never "enabled")
cat > "$ROOT/etc/systemd/system/kubelet.service" <<'EOF'
[Unit]
Description=Kubernetes Kubelet (test stand-in)

[Service]
Type=simple
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
EOF

# dnsmasq stays off until a test lays out the single-node dnsmasq configuration and starts it
chroot "$ROOT" systemctl disable -q dnsmasq.service
# chronyd as RHCOS runs it: chrony's own examples/chronyd.service (as root: Debian's unit runs
# it as _chrony through `ExecStart=!`, which a drop-in replacing ExecStart would lose). It stays
# off: with no reachable source it would hold every relocation in the clock step's bounded wait;
# a scenario enables it, and the ntp step restarts it with the site's config.
chroot "$ROOT" systemctl disable -q chrony.service
chroot "$ROOT" systemctl mask -q chrony.service
cat > "$ROOT/etc/systemd/system/chronyd.service" <<'EOF'
[Unit]
Description=NTP client/server
Documentation=man:chronyd(8) man:chrony.conf(5)
After=ntpdate.service sntp.service ntpd.service
Conflicts=ntpd.service systemd-timesyncd.service
ConditionCapability=CAP_SYS_TIME

[Service]
Type=forking
PIDFile=/run/chrony/chronyd.pid
EnvironmentFile=-/etc/sysconfig/chronyd
ExecStart=/usr/sbin/chronyd $OPTIONS
PrivateTmp=yes
ProtectHome=yes
ProtectSystem=full

[Install]
WantedBy=multi-user.target
EOF

# less background work under emulation
for t in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer \
  dpkg-db-backup.timer; do
  chroot "$ROOT" systemctl disable -q "$t" 2>/dev/null || true
done

# -cpu max offers svm/vmx and AMD power states: keep their modules (useless here, and kvm_amd
# fails on the trimmed ccp) from loading
printf 'blacklist %s\n' kvm kvm_amd kvm_intel powernow_k8 > "$ROOT/etc/modprobe.d/sno-relocate-vm.conf"

# node, as the host has it (same bookworm glibc and libstdc++)
install -m 0755 "$NODE_BIN" "$ROOT/usr/local/bin/node"

chroot "$ROOT" dpkg-query -W -f '${Package} ${Version}\n' > "$OUT/manifest.txt"
rm -rf "$ROOT"/var/cache/apt/*.bin "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/log/*.log "$ROOT"/tmp/*
log "configured"

# --- kernel: vmlinux for PVH, initrd ------------------------------------------------------------
# Find the compressed payload inside the bzImage and unpack it (xz, then the other usual formats).
# Written to temporary files, not pipes: `tail | xz` under pipefail dies of SIGPIPE.
extract_vmlinux() {
  local img=$1 out=$2 magic cmd off
  for entry in 'xz:\xfd\x37\x7a\x58\x5a\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
    cmd=${entry%%:*}
    magic=${entry#*:}
    command -v "$cmd" >/dev/null || continue
    for off in $(LC_ALL=C grep -aboP "$magic" "$img" | cut -d: -f1 || true); do
      tail -c "+$((off + 1))" "$img" > "$WORK/payload"
      case $cmd in
        xz) xz -dc --single-stream < "$WORK/payload" > "$out" 2>/dev/null || true ;;
        *) "$cmd" -dc < "$WORK/payload" > "$out" 2>/dev/null || true ;;
      esac
      if [ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; then
        rm -f "$WORK/payload"
        return 0
      fi
    done
  done
  return 1
}
extract_vmlinux "$ROOT/boot/vmlinuz-$KVER" "$OUT/vmlinux" || die "could not extract vmlinux"
cp "$ROOT/boot/initrd.img-$KVER" "$OUT/initrd.img"
echo "$KVER" > "$OUT/kernel-version"
log "vmlinux $(du -m "$OUT/vmlinux" | cut -f1) MB, initrd $(du -k "$OUT/initrd.img" | cut -f1) KB"

# --- root filesystem image ----------------------------------------------------------------------
truncate -s "$IMAGE_SIZE" "$WORK/base.raw"
mkfs.ext4 -q -F -L sno-root -d "$ROOT" "$WORK/base.raw"
mv "$WORK/base.raw" "$OUT/base.raw"
log "base.raw: $(du -m "$OUT/base.raw" | cut -f1) MB used of $IMAGE_SIZE"

date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/.complete"
# images of older versions of this script, unused for a week
find "$CACHE_ROOT" -mindepth 2 -maxdepth 2 -name .complete -mtime +7 -printf '%h\n' | while read -r old; do
  [ "$old" = "$OUT" ] || { log "removing stale $old"; rm -rf "$old" "$CACHE_ROOT/.lock-$(basename "$old")"; }
done
log "done"
echo "$OUT"
