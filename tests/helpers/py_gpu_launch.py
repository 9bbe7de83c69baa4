"""A Python program that launches simulated GPU kernels (labelled simulated)
through liblatsplit-engine.so, as a PyTorch runtime would launch real ones:
step() -> launch_kernel() calls latsplit_gpu_launch(correlation) then hands
the device record (latsplit_gpu_emit). For the GPU-launch-stack test: the
GPU flame graph must name launch_kernel under step. argv[1]: library path,
argv[2]: seconds."""
import ctypes
import sys
import time


class Rec(ctypes.Structure):
    _fields_ = [("start_ns", ctypes.c_uint64), ("end_ns", ctypes.c_uint64), ("bytes", ctypes.c_uint64),
                ("kind", ctypes.c_uint32), ("copy_kind", ctypes.c_uint32), ("source", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("device", ctypes.c_uint32), ("stream", ctypes.c_uint32),
                ("correlation", ctypes.c_uint32), ("pad", ctypes.c_uint32), ("name", ctypes.c_char * 64)]


lib = ctypes.CDLL(sys.argv[1])
lib.latsplit_gpu_launch.argtypes = [ctypes.c_uint32]
lib.latsplit_gpu_emit.argtypes = [ctypes.POINTER(Rec), ctypes.c_uint32]


def launch_kernel(corr):
    lib.latsplit_gpu_launch(corr)
    t = time.monotonic_ns()
    time.sleep(0.002)  # the simulated kernel runs 2 ms
    rec = Rec(start_ns=t, end_ns=t + 2_000_000, kind=1, source=1, correlation=corr,
              name=b"simulated_gemm")
    lib.latsplit_gpu_emit(ctypes.byref(rec), 1)


def step(corr):
    launch_kernel(corr)


print("ready", flush=True)
end, corr = time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < end:
    corr += 1
    step(corr)
