#!/usr/bin/env bash
# The totals of docs/fuzz.md's table from fuzz/run.sh's log: per target, the
# runs, executions and seconds accumulated, and whether any run failed.
# usage: fuzz/table.sh BUILD/fuzz-runs.tsv...
awk -F'\t' '{ runs[$2]++; ex[$2] += $3; s[$2] += $4; if ($5 != 0) bad[$2]++ }
    END { printf "| %-15s | %5s | %14s | %8s | %s |\n", "target", "runs", "executions", "seconds", "failed runs"
          printf "|%s|%s|%s|%s|%s|\n", "-----------------", "-------", "----------------", "----------", "-------------"
          for (t in runs) printf "| %-15s | %5d | %14d | %8d | %d |\n", t, runs[t], ex[t], s[t], bad[t] }' "$@" |
    { read -r h; read -r d; echo "$h"; echo "$d"; sort; }
