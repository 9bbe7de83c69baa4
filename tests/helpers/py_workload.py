"""A Python program with a known hot function and a known sleeping one, for
the Python-frame tests: hot_loop burns CPU in pure Python, nap sleeps (off
CPU, in time.sleep), both called from worker(); matmul (with numpy, when
--numpy) calls into native code; with --thread the work runs in a second
Python thread (the main one waits in join). Runs for argv[1] seconds.
Prints "ready" once started (for attaching)."""
import sys
import time


def hot_loop(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def nap():
    time.sleep(0.02)


def matmul(np, a):
    return a @ a


def worker(seconds, use_numpy):
    np = a = None
    if use_numpy:
        import numpy as np
        a = np.random.rand(300, 300)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hot_loop(200000)
        nap()
        if use_numpy:
            matmul(np, a)


if __name__ == "__main__":
    print("ready", flush=True)
    args = (float(sys.argv[1]), "--numpy" in sys.argv)
    if "--thread" in sys.argv:
        import threading
        t = threading.Thread(target=worker, args=args, name="pyworker")
        t.start()
        t.join()
    else:
        worker(*args)
