#!/usr/bin/env bash
# Times the README's first Quick start command from a bare machine: a
# minimal Debian 12 root made by debootstrap, a clone of this repository's
# HEAD in it, then `vendor/bootstrap first-job` inside a chroot (installing
# the `build` group of vendor/packages.txt, building, running the first job
# to `succeeded`). Linux only, as root, with debootstrap and a reachable
# Debian archive; nothing is installed on the host itself.
#
#   sudo tests/bench/bare_first_job.sh [ROOT_FOLDER] [MIRROR]
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
root="${1:-${TMPDIR:-/tmp}/navette-bare}"
need_dir root
mirror="${2:-http://deb.debian.org/debian}"

[[ $(id -u) -eq 0 ]] || { echo "bare_first_job: run as root (chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "bare_first_job: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
[[ ! -e $root ]] || { echo "bare_first_job: $root exists; give an empty path" >&2; exit 2; }

mounted=()
cleanup() {
  local m
  for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done
}
trap cleanup EXIT

t0=$SECONDS
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { echo "bare_first_job: debootstrap failed (see $root.debootstrap.log)" >&2; exit 1; }
t1=$SECONDS
git clone -q "$src" "$root/root/navette"
for m in proc dev dev/pts; do
  if [[ $m == proc ]]; then mount -t proc proc "$root/proc"; else mount --bind "/$m" "$root/$m"; fi
  mounted=("$root/$m" "${mounted[@]}")
done
cp /etc/resolv.conf "$root/etc/"
status=0
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
  bash -c 'cd /root/navette && vendor/bootstrap first-job' || status=$?
t2=$SECONDS
printf 'bare_first_job: commit %s\n' "$(git -C "$src" rev-parse --short HEAD)"
printf 'bare_first_job: debootstrap (a bare Debian 12)      %4d s\n' $((t1 - t0))
printf 'bare_first_job: vendor/bootstrap first-job, exit %d %4d s\n' "$status" $((t2 - t1))
exit "$status"
