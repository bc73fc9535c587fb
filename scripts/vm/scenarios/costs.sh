# The guest's costs (issue 17, item 3): numa-costs in the 4-node guest, alone on it, with
# kernel.numa_balancing=0 so no hinting fault or scan mixes in. Prints its `cost ...` lines.
sysctl -qw kernel.numa_balancing=0
say "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
numa-costs --mb "${COSTS_MB:-64}" --runs "${COSTS_RUNS:-5}" || fail "numa-costs exit status $?"
exit $FAILED
