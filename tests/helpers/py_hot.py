"""A pure-Python hot loop for argv[1] seconds: spin() is where every sample
of this process should be (test_python_versions)."""
import sys
import time


def spin(until):
    x = 0
    while time.monotonic() < until:
        for i in range(2000):
            x += i * i
    return x


if __name__ == "__main__":
    spin(time.monotonic() + float(sys.argv[1]))
