#!/usr/bin/env bash
# The totals of docs/fuzz.md's table from fuzz/run.sh's log: per target, the
# runs, executions and seconds accumulated, the runs that failed (a crash,
# a leak, a hang) and those stopped by a signal (exit 72: interrupted, no
# finding; their executions count).
# usage: fuzz/table.sh BUILD/fuzz-runs.tsv...
awk -F'\t' '{ runs[$2]++; ex[$2] += $3; s[$2] += $4; if ($5 == 72) cut[$2]++; else if ($5 != 0) bad[$2]++ }
    END { printf "| %-17s | %5s | %14s | %8s | %s | %s |\n", "target", "runs", "executions", "seconds", "failed runs",
                 "interrupted"
          printf "|%s|%s|%s|%s|%s|%s|\n", "-------------------", "-------", "----------------", "----------",
                 "-------------", "-------------"
          for (t in runs)
              printf "| %-17s | %5d | %14d | %8d | %11d | %11d |\n", t, runs[t], ex[t], s[t], bad[t], cut[t] }' "$@" |
    { read -r h; read -r d; echo "$h"; echo "$d"; sort; }
