# shellcheck shell=bash
# scripts/apt_lock.sh: wait for Debian's package lock; sourced by scripts/setup.
#
# Another package manager (unattended-upgrades, apt, packagekit) may hold dpkg's and apt's
# locks for minutes; apt-get then stops at once ("Could not get lock
# /var/lib/dpkg/lock-frontend. It is held by process 1234 (apt-get)"). apt_get runs apt-get
# once no lock is held: it waits while one is, says once which process holds it, and after
# LLM_WARMTH_APT_LOCK_WAIT seconds (default 300) stops with one sentence that names it.
#
#   apt_get ARGS...            apt-get ARGS... after the wait (apt itself is also given
#                              DPkg::Lock::Timeout: apt >= 1.9.11 waits for dpkg's frontend
#                              lock taken just after the look); 1 when the lock stays held
#   apt_wait_for_lock [SECS]   only the wait: 0 once no lock is held, 1 when one stays held
#   apt_lock_holder            "PID (NAME)" of a process that holds one of the locks; 1: none
#
# The holder is read from /proc/locks (dpkg and apt take fcntl write locks, which it lists)
# and its name from /proc/PID/comm: no fuser or lsof is needed, nor root to look.
# LLM_WARMTH_DPKG_LOCKS: the lock files, separated by spaces, instead of dpkg's and apt's
# (the tests hold a lock on a file of their own).

_APT_LOCK_FILES="/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock"

# The bounded wait, in whole seconds: LLM_WARMTH_APT_LOCK_WAIT, else 300.
_apt_lock_wait_seconds() {
  local wait=${1:-${LLM_WARMTH_APT_LOCK_WAIT:-300}}
  case $wait in
    '' | *[!0-9]*)
      echo "scripts/setup: LLM_WARMTH_APT_LOCK_WAIT=$wait is not a whole number of seconds" >&2
      return 2
      ;;
  esac
  echo "$((10#$wait))"
}

# The pid that holds a lock on FILE, as /proc/locks shows it; 1 when none is held.
_apt_lock_pid() {
  local file=$1 dev ino major minor kind pid id lmaj lmin lino fd target
  local same_inode=()
  [ -e "$file" ] && [ -r /proc/locks ] || return 1
  read -r dev ino < <(stat -L -c '%d %i' "$file" 2>/dev/null) || return 1
  # st_dev as the kernel's major and minor numbers, which /proc/locks writes in hex.
  major=$(( ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfff) ))
  minor=$(( (dev & 0xff) | ((dev >> 12) & ~0xff) ))
  # Lines: "1: POSIX  ADVISORY  WRITE 1234 08:01:393220 0 EOF"; "1: -> POSIX ..." is a waiter.
  while read -r _ kind _ _ pid id _; do
    if [ "$kind" = "->" ]; then continue; fi
    IFS=: read -r lmaj lmin lino <<<"$id"
    if [ "$lino" != "$ino" ]; then continue; fi
    if ! [[ $lmaj =~ ^[0-9a-fA-F]+$ && $lmin =~ ^[0-9a-fA-F]+$ ]]; then continue; fi
    if [ "$((16#$lmaj))" = "$major" ] && [ "$((16#$lmin))" = "$minor" ]; then
      echo "$pid"
      return 0
    fi
    same_inode+=("$pid")
  done </proc/locks
  # On overlayfs (a container) the lock lies on the layer's file: the same inode number on
  # another device. Such a holder has the lock file open.
  target=$(readlink -f "$file")
  for pid in "${same_inode[@]}"; do
    for fd in /proc/"$pid"/fd/*; do
      if [ "$(readlink -f "$fd" 2>/dev/null)" = "$target" ]; then
        echo "$pid"
        return 0
      fi
    done
  done
  return 1
}

_apt_process_name() {
  local name=
  if [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ]; then
    name=$(cat "/proc/$1/comm" 2>/dev/null) || name=$(ps -o comm= -p "$1" 2>/dev/null) || name=
  fi
  echo "${name:-unknown}"
}

apt_lock_holder() {
  local files file pid
  read -r -a files <<<"${LLM_WARMTH_DPKG_LOCKS:-$_APT_LOCK_FILES}"
  for file in "${files[@]}"; do
    if pid=$(_apt_lock_pid "$file"); then
      # An open file description lock, or a holder in another pid namespace, shows no pid.
      if ! [[ $pid =~ ^[0-9]+$ ]] || [ "$pid" -le 0 ]; then pid="?"; fi
      echo "$pid ($(_apt_process_name "$pid"))"
      return 0
    fi
  done
  return 1
}

_apt_lock_waiting() {
  echo "scripts/setup: waiting up to $1 s for Debian's package lock, held by process $2" >&2
}

_apt_lock_still_held() {
  echo "scripts/setup: Debian's package lock is still held by process $2 after $1 s; wait for it to finish (or stop it) and run scripts/setup again." >&2
}

# Poll every half second while a lock is held, for at most SECS seconds; 1 when still held.
_apt_lock_poll() {
  local polls=0
  while apt_lock_holder >/dev/null; do
    if [ "$polls" -ge $(($1 * 2)) ]; then return 1; fi
    sleep 0.5
    polls=$((polls + 1))
  done
  return 0
}

apt_wait_for_lock() {
  local wait holder
  wait=$(_apt_lock_wait_seconds "${1:-}") || return 2
  holder=$(apt_lock_holder) || return 0
  _apt_lock_waiting "$wait" "$holder"
  if _apt_lock_poll "$wait"; then return 0; fi
  holder=$(apt_lock_holder) || return 0
  _apt_lock_still_held "$wait" "$holder"
  return 1
}

# apt's own refusal of a held lock: "PID (NAME)" from "It is held by process PID (NAME)".
_apt_lock_refusal() {
  local said
  said=$(sed -n 's/.*It is held by process \([0-9][0-9]*\) (\([^)]*\)).*/\1 (\2)/p' "$1" | head -n 1)
  if [ -n "$said" ]; then
    echo "$said"
    return 0
  fi
  if grep -qE 'Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock' "$1"; then
    apt_lock_holder || echo "? (unknown)"
    return 0
  fi
  return 1
}

apt_get() {
  local wait start left holder err rc said=
  wait=$(_apt_lock_wait_seconds) || return 2
  start=$SECONDS
  err=$(mktemp)
  while :; do
    if holder=$(apt_lock_holder); then
      if [ -z "$said" ]; then
        _apt_lock_waiting "$wait" "$holder"
        said=1
      fi
      left=$((wait - (SECONDS - start)))
      if [ "$left" -lt 0 ] || ! _apt_lock_poll "$left"; then
        # Given up just as it was let go: look again.
        if ! holder=$(apt_lock_holder); then continue; fi
        _apt_lock_still_held "$wait" "$holder"
        rm -f "$err"
        return 1
      fi
    fi
    left=$((wait - (SECONDS - start)))
    if [ "$left" -lt 0 ]; then left=0; fi
    rc=0
    apt-get -o DPkg::Lock::Timeout="$left" "$@" 2>"$err" || rc=$?
    # Another package manager took a lock between the look and apt-get: wait again, in the
    # same bounded time.
    if [ "$rc" -ne 0 ] && holder=$(_apt_lock_refusal "$err"); then
      if [ -z "$said" ]; then
        _apt_lock_waiting "$wait" "$holder"
        said=1
      fi
      if [ $((SECONDS - start)) -lt "$wait" ]; then
        sleep 1
        continue
      fi
      _apt_lock_still_held "$wait" "$holder"
      rm -f "$err"
      return 1
    fi
    cat "$err" >&2
    rm -f "$err"
    return "$rc"
  done
}
