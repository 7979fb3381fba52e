"""Turning a planned model into SCons nodes, by what the files do (lower floors first):
  run/      running programs: the run step on this machine, a simulator's log, run.log's check
  reports/  report.json and its table, report.html, the matrix summary, fidelity, consistency
  graph/    the SCons node graph: session state, actions, node declarations, the Tool, the
            build folder, the cache, the standalone export, the console
  main.py, noop.py, explain.py: nnscons's own front end (the SConstruct, its no-op fast
            path, `explain`) on top."""
