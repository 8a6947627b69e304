#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, everything under DIR: its own munged (key, socket), slurmctld and
# slurmd (as root), state, spool and logs. For the test suite (the Slurm target's end-to-end tests, sharded
# rollouts on job arrays) and for trying the Slurm target by hand. Needs Debian's slurm-wlm and munge
# (apt-get install -y slurm-wlm munge) and root (sudo works: jobs then run as the user who submits them).
#
#   scripts/startSlurm.sh DIR         start (again: a no-op while it runs); prints the environment its clients need
#   scripts/startSlurm.sh DIR stop    stop it (DIR is left for the caller to remove)
#
# The environment (SLURM_CONF=...) is printed as `export` lines and written to DIR/env as NAME=VALUE lines.
# Settings for tests: jobs end 2 s after SIGTERM (KillWait), the node has 4 CPUs whatever the machine has
# (config_overrides), finished jobs stay known to scontrol for an hour (MinJobAge). No accounting (no slurmdbd):
# sacct says so, and the jobs' end states come from scontrol.
set -euo pipefail

dir="${1:?usage: scripts/startSlurm.sh DIR [stop]}"
action="${2:-start}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pid() {
  local f="$1"
  [ -s "$f" ] || return 0
  local pid
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

if [ "$action" = stop ]; then
  # Jobs first: a job's slurmstepd outlives slurmd.
  if alive "$dir/slurmctld.pid" && [ -f "$dir/slurm.conf" ]; then
    export SLURM_CONF="$dir/slurm.conf"
    ids="$(squeue -h -o %i 2>/dev/null || true)"
    # shellcheck disable=SC2086 # one argument per job id
    [ -z "$ids" ] || scancel --full $ids 2>/dev/null || true
    for _ in $(seq 1 100); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  stop_pid "$dir/slurmd.pid"
  stop_pid "$dir/slurmctld.pid"
  stop_pid "$dir/munged.pid"
  exit 0
fi
[ "$action" = start ] || { echo "unknown action \"$action\": start or stop" >&2; exit 2; }

for tool in munged slurmctld slurmd sbatch; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || { echo "$tool is missing: apt-get install -y slurm-wlm munge" >&2; exit 3; }
done
[ "$(id -u)" = 0 ] || { echo "slurmd runs jobs as their users, so it needs root: run this as root" >&2; exit 3; }
export PATH="$PATH:/usr/sbin"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

node="$(hostname -s)"
conf="$dir/slurm.conf"
mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
# Clients of any user reach munged's socket here; the key itself is root's alone (0400).
chmod 755 "$dir/munge"

if [ ! -f "$conf" ]; then
  [ -f "$dir/munge/munge.key" ] || { head -c 1024 /dev/urandom > "$dir/munge/munge.key"; chmod 400 "$dir/munge/munge.key"; }
  cat > "$conf" <<EOF
ClusterName=rollout-lab-test
SlurmctldHost=$node
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
KillWait=2
OverTimeLimit=0
InactiveLimit=0
MessageTimeout=10
MailProg=/bin/true
NodeName=$node CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
fi

alive "$dir/munged.pid" || munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munged.seed"
alive "$dir/slurmctld.pid" || slurmctld -f "$conf"
alive "$dir/slurmd.pid" || slurmd -f "$conf" -N "$node"

export SLURM_CONF="$conf"
state=""
for _ in $(seq 1 300); do
  state="$(sinfo -h -n "$node" -o %T 2>/dev/null || true)"
  case "$state" in idle*|mixed*|allocated*) break ;; esac
  sleep 0.2
done
case "$state" in
  idle*|mixed*|allocated*) ;;
  *) echo "the Slurm node $node did not come up (state: ${state:-none}); logs: $dir/slurmctld.log $dir/slurmd.log" >&2
     tail -n 5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 2>/dev/null || true
     exit 1 ;;
esac

printf 'SLURM_CONF=%s\n' "$conf" > "$dir/env"
printf 'export SLURM_CONF=%s\n' "$conf"
