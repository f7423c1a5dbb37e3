# SPDX-License-Identifier: Apache-2.0
# Shell helpers shared by the bench scripts (sourced, not run).

# cpu_ns PID: CPU time (ns, from schedstat) of the process's live threads (0 when no PID,
# nan when it is gone)
cpu_ns() {
	local sum=0 t ns rest
	[ -n "$1" ] || { echo 0; return; }
	[ -d /proc/"$1"/task ] || { echo nan; return; }
	for t in /proc/"$1"/task/*/schedstat; do
		read -r ns rest 2>/dev/null <"$t" || continue
		sum=$((sum + ns))
	done
	echo $sum
}
