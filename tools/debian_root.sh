# Shared by the scripts that build and cache a Debian root (bash; sourced, not run):
# tools/test_aarch64.sh (an emulated arm64 root) and tools/ecosystem/nspawn_root.sh
# (a native root booted with systemd-nspawn). Before sourcing it, set LOG_TAG (the
# prefix of every message).
#
#   say, die, step          messages; step prints the seconds since the script began
#   need_debs CMD:PKG ...   installs the Debian packages whose command is missing
#   lock_cache DIR          one run at a time per cache folder (flock on DIR/lock)
#   unmount_stale ROOT      undoes mounts an interrupted run left under ROOT
#   mount_into ROOT         /proc, /sys, /dev, /dev/pts into ROOT for chroot; undone by
#                           cleanup_mounts (on EXIT once trap_cleanup has run)
#   build_root ROOT ARCH INCLUDE LOGDIR
#                           debootstrap bookworm (minbase + INCLUDE, comma-separated);
#                           a foreign ARCH gets its first stage only, every package
#                           unpacked on the host, no maintainer scripts (see
#                           unpack_foreign_root) and ldconfig under qemu-user. The
#                           marker ROOT/.edgelearn-root-complete, written last, tells
#                           a finished root from an interrupted one (rebuilt)
#   HOST_CA, copy_host_ca   the CA bundle pip trusts here, for pip in a native root

say() { echo "$LOG_TAG: $*" >&2; }
die() { echo "$LOG_TAG: FAILED: $*" >&2; exit 1; }
step_start=$(date +%s)
step() { local now; now=$(date +%s); say "[$((now - step_start)) s] $*"; }

need_debs() {  # CMD:PACKAGE ...; CMD is a name on PATH or an absolute path
    local pair cmd pkg missing=""
    for pair in "$@"; do
        cmd=${pair%%:*}; pkg=${pair#*:}
        case $cmd in
            /*) [ -e "$cmd" ] || missing="$missing $pkg" ;;
            *) command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing="$missing $pkg" ;;
        esac
    done
    [ -z "$missing" ] && return 0
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "needs the Debian packages$missing: install them (as root)"
        sudo=sudo
    fi
    step "installing Debian packages:$missing"
    $sudo apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null \
        || die "apt-get install$missing failed"
}

lock_cache() {  # DIR
    mkdir -p "$1"
    exec 9>"$1/lock"
    flock -n 9 || die "another run holds $1/lock"
}

unmount_stale() {  # ROOT; call with the cache's lock held
    local m stale
    stale=$(awk -v r="$1/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r)
    for m in $stale; do
        say "unmounting $m, left by an interrupted run"
        umount -l "$m" || die "cannot unmount $m (left by an interrupted run)"
    done
}

MOUNTED=()
cleanup_mounts() {
    local i
    for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
        umount -l "${MOUNTED[i]}" 2>/dev/null || say "could not unmount ${MOUNTED[i]}"
    done
    MOUNTED=()
}
trap_cleanup() {
    trap cleanup_mounts EXIT
    trap 'exit 130' INT TERM
}

mount_into() {  # ROOT
    local r="$1"
    mkdir -p "$r/proc" "$r/sys" "$r/dev" "$r/dev/pts" "$r/tmp"
    mount -t proc proc "$r/proc" || die "cannot mount /proc in $r"; MOUNTED+=("$r/proc")
    mount --rbind /sys "$r/sys" || die "cannot bind /sys into $r"; MOUNTED+=("$r/sys")
    mount --bind /dev "$r/dev" || die "cannot bind /dev into $r"; MOUNTED+=("$r/dev")
    mount --bind /dev/pts "$r/dev/pts" || die "cannot bind /dev/pts into $r"; MOUNTED+=("$r/dev/pts")
    # The Debian packages and pip need names resolved.
    cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
}

MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

build_root() {  # ROOT ARCH INCLUDE LOGDIR
    local root="$1" arch="$2" include="$3" logs="$4"
    local marker="$root/.edgelearn-root-complete"
    if [ -e "$marker" ]; then
        step "root cached at $root"
        return 0
    fi
    if [ -e "$root" ]; then
        step "removing a half-built root ($root has no marker)"
        rm -rf --one-file-system "$root"
    fi
    mkdir -p "$logs"
    if [ "$arch" = "$(dpkg --print-architecture)" ]; then
        step "debootstrap bookworm $arch (a few minutes)"
        debootstrap --arch="$arch" --variant=minbase --include="$include" bookworm "$root" "$MIRROR" \
            >"$logs/debootstrap.log" 2>&1 \
            || die "debootstrap failed; see $logs/debootstrap.log"
    else
        step "debootstrap --foreign bookworm $arch (first stage, on the host)"
        debootstrap --foreign --arch="$arch" --variant=minbase --include="$include" bookworm "$root" "$MIRROR" \
            >"$logs/debootstrap-1.log" 2>&1 \
            || die "debootstrap first stage failed; see $logs/debootstrap-1.log"
        step "unpacking the packages the first stage only downloaded (on the host)"
        unpack_foreign_root "$root" "$logs/unpack.log"
        cp "/usr/bin/qemu-$(qemu_name "$arch")-static" "$root/usr/bin/"
        chroot "$root" /sbin/ldconfig >>"$logs/unpack.log" 2>&1 \
            || die "ldconfig failed in the $arch root (under qemu); see $logs/unpack.log"
    fi
    date -u +%FT%TZ >"$marker"
    step "root ready"
}

# A foreign root gets no second stage: run under qemu-user, dpkg and the maintainer
# scripts of a minbase root took 19 of a cold `make test-aarch64`'s 34 minutes.
# What the root is used for (running its python3 and shared libraries in a chroot)
# needs only the packages' files, so every downloaded package is unpacked here and
# the two things its scripts do that a chroot needs are done by hand: the account
# files base-passwd's postinst writes and a /proc directory (the first stage leaves
# a symlink to the host's). dpkg's database stays empty: apt cannot be used in it.
unpack_foreign_root() {  # ROOT LOG
    local root="$1" log="$2" pkg deb
    : >"$log"
    for pkg in $(cat "$root/debootstrap/required" "$root/debootstrap/base"); do
        deb=$(ls "$root/var/cache/apt/archives/${pkg}_"*.deb 2>/dev/null | head -n 1)
        [ -n "$deb" ] || die "debootstrap downloaded no .deb of $pkg into $root/var/cache/apt/archives"
        echo "unpacking $(basename "$deb")" >>"$log"
        # merged /usr: keep the first stage's /bin -> usr/bin (and lib, sbin) links.
        dpkg-deb --fsys-tarfile "$deb" | tar -C "$root" --keep-directory-symlink -xf - 2>>"$log" \
            || die "could not unpack $deb into $root; see $log"
    done
    [ -L "$root/proc" ] && rm "$root/proc"
    mkdir -p "$root/proc"
    cp "$root/usr/share/base-passwd/passwd.master" "$root/etc/passwd" \
        && cp "$root/usr/share/base-passwd/group.master" "$root/etc/group" \
        || die "the root has no base-passwd account files in $root/usr/share/base-passwd"
    rm -rf "$root/var/cache/apt/archives/"*.deb "$root/debootstrap"
}

qemu_name() {  # Debian architecture -> qemu's name for it
    case $1 in arm64) echo aarch64 ;; armhf) echo arm ;; *) echo "$1" ;; esac
}

# pip in a root trusts what pip here trusts (a network whose proxy re-signs TLS
# has its CA in the host's bundle, not in Debian's). The arm64 root of
# tools/test_aarch64.sh never reaches the network: its wheels are downloaded here.
HOST_CA="${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}"

copy_host_ca() {  # ROOT: the host's CA bundle as ROOT/etc/ssl/host-ca.crt (or none)
    if [ -s "$HOST_CA" ]; then
        mkdir -p "$1/etc/ssl"
        cp -L "$HOST_CA" "$1/etc/ssl/host-ca.crt"
    else
        rm -f "$1/etc/ssl/host-ca.crt"
    fi
}
