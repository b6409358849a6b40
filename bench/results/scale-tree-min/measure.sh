#!/usr/bin/env bash
# tree vs push/dissemination at 32 and 64 PEs: alternating settings, bench/scale.c, SCALE_ITERS iterations
# Run on 2026-11-27 from /tmp/tm: NEW = the scale29d worktree (slot fix), OLD = the fresh clone of main 202949b; output tree.csv and one log per run (logs.tar.gz).
# usage: measure.sh ROUNDS SIZES   e.g. measure.sh 3 "32:16 64:32"
set -u
R=${1:-3}; SIZES=${2:-"32:16 64:32"}; IT=${IT:-20}
NEW=/work/wt-teams/build/prefix OLD=/tmp/scale-fresh/build/prefix
OUT=/tmp/tm; mkdir -p $OUT
$NEW/bin/ishmemcc -O2 -o $OUT/scale_new /work/wt-teams/bench/scale.c || exit 1
$OLD/bin/ishmemcc -O2 -o $OUT/scale_old /tmp/scale-fresh/bench/scale.c || exit 1
export ISHMEM_BOOTSTRAP_TIMEOUT=600 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm" ISHMEM_GPU=0
csv=$OUT/tree.csv
[ -e $csv ] || echo "setting,npes,round,start,load1,init_s,barrier_all_us,broadcast8_us,sum_reduce8_us,fcollect8_us,tcp_conns_mean,tcp_conns_max,wall_s" > $csv
for sz in $SIZES; do
  np=${sz%%:*} nodes=${sz##*:}
  sets="push tree"; [ $np -ge 49 ] && sets="old push tree"
  for r in $(seq 1 $R); do
    for s in $sets; do
      case $s in
        old)  pre=$OLD; bin=$OUT/scale_old; envs="" ;;
        push) pre=$NEW; bin=$OUT/scale_new; envs="ISHMEM_COLL_TREE_MIN=0" ;;
        tree) pre=$NEW; bin=$OUT/scale_new; envs="ISHMEM_COLL_TREE_MIN=2 ISHMEM_COLL_SMALL_MAX=0" ;;
      esac
      log=$OUT/$s.$np.$r.log
      st=$(date -u +%T); l1=$(cut -d' ' -f1 /proc/loadavg)
      t0=$(date +%s.%N)
      echo "+ env $envs ISHMEM_NODE_SPLIT=$nodes $pre/bin/ishmrun --timeout 900 -n $np $bin $IT" > $log
      nice -n 5 env $envs ISHMEM_NODE_SPLIT=$nodes $pre/bin/ishmrun --timeout 900 -n $np $bin $IT >> $log 2>&1
      rc=$?
      w=$(echo "$(date +%s.%N) - $t0" | bc)
      g() { awk -v k=$1 '$1=="SCALE" && $2==k {print $4}' $log; }
      gm() { awk -v k=$1 '$1=="SCALE" && $2==k {print $6}' $log; }
      echo "$s,$np,$r,$st,$l1,$(g init_s),$(g barrier_all_us),$(g broadcast8_us),$(g sum_reduce8_us),$(g fcollect8_us),$(gm tcp_conns_after),$(g tcp_conns_after),$w" >> $csv
      [ $rc = 0 ] && grep -q '^SCALE failed max 0$' $log || echo "FAIL $s $np $r rc=$rc" >> $csv
      tail -1 $csv
    done
  done
done
