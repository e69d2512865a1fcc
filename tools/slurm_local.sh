#!/usr/bin/env bash
# A one-node SLURM on this machine, for testing the workflow's slurm profile against a real
# scheduler (not a mock). Debian packages munge, slurmctld, slurmd, slurm-client; run as root;
# no systemd: the daemons are started by hand.
#
#   tools/slurm_local.sh start    install if needed, write /etc/slurm/slurm.conf, start daemons
#   tools/slurm_local.sh stop     stop the daemons this script started
#   tools/slurm_local.sh status   sinfo
#
# Facts checked on these machines: the config must be at /etc/slurm/slurm.conf (Snakemake's job
# step drops SLURM_CONF); no slurmdbd, so accounting is off and jobs are followed with squeue
# (sacct hangs); one fake GPU (gres.conf File=/dev/null) so jobs that ask for a GPU can run.
set -euo pipefail

STATE=/var/lib/llmdyn-slurm
CONF=/etc/slurm

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "slurm_local.sh: must run as root (it writes /etc/slurm and starts daemons)" >&2
    exit 2
  fi
}

install() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
     && command -v munged >/dev/null && command -v sbatch >/dev/null; then
    return
  fi
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q munge slurmctld slurmd slurm-client
}

write_config() {
  local host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)  # about 80 % in MB
  mkdir -p "$CONF" "$STATE"/{ctld,d} /var/log/slurm /run/munge
  cat > "$CONF/slurm.conf" <<EOF
# Written by llmdyn tools/slurm_local.sh: a one-node cluster for tests.
ClusterName=llmdyn
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ReturnToService=2
MinJobAge=300
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem} Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes=${host} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=${host} MaxTime=INFINITE State=UP
EOF
  echo "Name=gpu File=/dev/null" > "$CONF/gres.conf"
}

start() {
  need_root
  install
  if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "SLURM already up: $(sinfo -h -o '%P %T %C' | tr '\n' ' ')"
    return
  fi
  write_config
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
  chmod 400 /etc/munge/munge.key
  pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd
  for _ in $(seq 30); do
    if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      echo "SLURM up: $(sinfo -h -o '%P %T %C' | tr '\n' ' ')"
      return
    fi
    sleep 1
  done
  echo "slurm_local.sh: the node did not become idle in 30 s; see /var/log/slurm/*.log" >&2
  exit 1
}

stop() {
  need_root
  for pidfile in "$STATE/slurmd.pid" "$STATE/slurmctld.pid"; do
    if [ -s "$pidfile" ]; then
      kill "$(cat "$pidfile")" 2>/dev/null || true
      rm -f "$pidfile"
    fi
  done
  if [ -s /run/munge/munged.pid ]; then
    kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
  fi
  echo "SLURM stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) sinfo ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
