"""ctypes wrapper for liblatsplit-engine.so: latsplit engine events from Python.

    from latsplit_engine import Engine
    ev = Engine()                      # finds the library (LATSPLIT_ENGINE_LIB or default paths)
    ev.arrived(req_id, x_request_id)   # HTTP request handed to the engine
    ev.queued(req_id, prompt_tokens)   # in the waiting queue
    ev.scheduled(req_id, batch_size)   # joined a running batch
    ev.first_token(req_id)
    ev.preempted(req_id); ev.resumed(req_id)
    ev.finished(req_id, status=0)      # 0 ok, 1 aborted, 2 error

Each call is a USDT probe guarded by a semaphore: with no latsplit attached it
costs a ctypes call and a branch. If the library is missing every method is a
no-op, so an engine never fails because of latsplit.
"""
import ctypes
import os

_PATHS = [os.environ.get("LATSPLIT_ENGINE_LIB", ""),
          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                       "liblatsplit-engine.so"),
          "/usr/local/lib/liblatsplit-engine.so", "liblatsplit-engine.so"]


class Engine:
    def __init__(self, path=None):
        self._lib = None
        for p in ([path] if path else _PATHS):
            if not p:
                continue
            try:
                self._lib = ctypes.CDLL(p)
                break
            except OSError:
                continue
        if self._lib is None:
            return
        u64, u32, s = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_char_p
        for name, args in (("request_arrived", [u64, s]), ("request_queued", [u64, u32]),
                           ("request_scheduled", [u64, u32]), ("first_token", [u64]),
                           ("request_preempted", [u64]), ("request_resumed", [u64]),
                           ("request_finished", [u64, u32])):
            fn = getattr(self._lib, "latsplit_" + name)
            fn.argtypes, fn.restype = args, None

    @property
    def loaded(self):
        return self._lib is not None

    def arrived(self, req_id, x_request_id=None):
        if self._lib:
            xr = x_request_id.encode() if isinstance(x_request_id, str) else x_request_id
            self._lib.latsplit_request_arrived(req_id, xr)

    def queued(self, req_id, prompt_tokens):
        if self._lib:
            self._lib.latsplit_request_queued(req_id, prompt_tokens)

    def scheduled(self, req_id, batch_size):
        if self._lib:
            self._lib.latsplit_request_scheduled(req_id, batch_size)

    def first_token(self, req_id):
        if self._lib:
            self._lib.latsplit_first_token(req_id)

    def preempted(self, req_id):
        if self._lib:
            self._lib.latsplit_request_preempted(req_id)

    def resumed(self, req_id):
        if self._lib:
            self._lib.latsplit_request_resumed(req_id)

    def finished(self, req_id, status=0):
        if self._lib:
            self._lib.latsplit_request_finished(req_id, status)
