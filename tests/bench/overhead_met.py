"""The met column of an overhead goal (tests/bench/run.sh's two sections)."""


def overhead_met(ratio, untraced, lighter, goal=0.9):
    """ratio: the full recording's req/s over untraced's (medians);
    lighter: (name, median req/s) of the floor and the lighter recordings.
    No recording makes the workload faster: one 5% past untraced says the
    host's own speed moved during the run (seen on the 2-CPU VM: nginx's
    untraced rounds 34-36 k req/s, its sched+tcp ones 46-51 k), and the
    ratio then proves nothing either way."""
    fast = [f"{name} {x / untraced:.3f}" for name, x in lighter if x > 1.05 * untraced]
    if fast:
        return "unresolved: " + ", ".join(fast) + " of untraced"
    return "yes" if ratio >= goal else "no"
