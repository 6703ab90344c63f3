#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for tests: munge, slurmctld and slurmd of the
# packaged Slurm (Debian's slurm-wlm 22.05), with settings that need no cgroups, all state under
# one directory. `start` prints the SLURM_CONF to export; `stop` ends the daemons.
#
#   slurm/cluster.sh start [DIR]   # DIR default target/slurm; exit 3 when Slurm cannot start
#   slurm/cluster.sh stop [DIR]
#
# The cluster: one node (this host, every CPU, 90 % of its memory, 8 GPUs that are only
# counted: no devices), one partition `debug` (default), requeue allowed, and schedlm's
# job_submit plugin (slurm/job_submit.lua), which reads DIR/schedlm-submit.conf when a job is
# submitted (docs/slurm.md).
set -euo pipefail
cd "$(dirname "$0")/.."
action="${1:-start}"
dir="$(realpath -m "${2:-target/slurm}")"
conf="$dir/slurm.conf"
# Off Slurm's own ports (6817, 6818), so that a real installation is not disturbed.
port="${SCHEDLM_SLURM_PORT:-6917}"

stop() {
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
    if [ -s "$pidfile" ]; then
      kill "$(cat "$pidfile")" 2>/dev/null || true
    fi
  done
  sleep 1
  rm -f "$dir"/*.pid
}

if [ "$action" = stop ]; then
  stop
  exit 0
fi

for tool in munged slurmctld slurmd sbatch sinfo; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "slurm/cluster.sh: $tool is not installed (apt-get install slurm-wlm munge)" >&2
    exit 3
  fi
done
stop
# A fresh cluster each time: no job or node state from an earlier one.
rm -rf "$dir/state" "$dir/spool"
mkdir -p "$dir/state" "$dir/spool" "$dir/munge" "$dir/munge-socket" "$dir/log"
chmod 700 "$dir/munge"
# The socket's folder is open to every user (the key's is not): tests submit as a second user.
chmod 755 "$dir" "$dir/munge-socket"
if [ ! -s "$dir/munge/munge.key" ]; then
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$dir/munge/munge.key"
user="$(id -un)"
host="$(hostname -s)"
cpus="$(nproc)"
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) * 9 / 10 / 1024 ))
cat > "$conf" <<CONF
ClusterName=schedlm-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$dir/munge-socket/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobRequeue=1
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MinJobAge=300
KillWait=5
CONF
cp slurm/job_submit.lua "$dir/job_submit.lua"
cat >> "$conf" <<CONF
JobSubmitPlugins=lua
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory Gres=gpu:8 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# Eight stand-in devices (links to /dev/null): slurmd counts a node's GPUs by the character
# devices gres.conf names.
mkdir -p "$dir/dev"
for i in 0 1 2 3 4 5 6 7; do ln -sfn /dev/null "$dir/dev/gpu$i"; done
echo "NodeName=$host Name=gpu File=$dir/dev/gpu[0-7]" > "$dir/gres.conf"

if ! munged --socket="$dir/munge-socket/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" \
  --force 2>"$dir/log/munged.err"; then
  echo "slurm/cluster.sh: munged did not start: $(cat "$dir/log/munged.err")" >&2
  exit 3
fi
export SLURM_CONF="$conf"
slurmctld -f "$conf" || { echo "slurm/cluster.sh: slurmctld did not start (see $dir/log)" >&2; stop; exit 3; }
slurmd -f "$conf" || { echo "slurm/cluster.sh: slurmd did not start (see $dir/log)" >&2; stop; exit 3; }
# Up when the node is idle and a first job runs to completion (a machine where slurmd cannot
# start jobs, as a user without the rights, counts as one where Slurm cannot start).
for _ in $(seq 1 30); do
  if sinfo -h -o %T 2>/dev/null | grep -q idle; then
    probe="$(sbatch --parsable --chdir="$dir" --output=/dev/null --time=1 --wrap true 2>/dev/null || true)"
    for _ in $(seq 1 30); do
      state="$(scontrol show job -o "$probe" 2>/dev/null | grep -o 'JobState=[A-Z_]*' || true)"
      if [ "$state" = JobState=COMPLETED ]; then
        echo "$conf"
        exit 0
      fi
      case "$state" in
        JobState=FAILED | JobState=CANCELLED | JobState=NODE_FAIL | "") break ;;
      esac
      sleep 1
    done
    echo "slurm/cluster.sh: a first job did not run (${state:-not submitted})" >&2
    break
  fi
  sleep 1
done
echo "slurm/cluster.sh: the node did not come up: $(sinfo -h 2>&1 | head -3)" >&2
tail -n 5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
stop
exit 3
