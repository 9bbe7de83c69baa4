# latsplit build. `make` builds the agent and tools into build/; see README.
# Expanded when a BPF object is compiled, not when the Makefile is parsed:
# on a bare box `make demo` installs gcc first (the deps prerequisite). The
# fallback is Debian's multiarch name for this machine.
ARCH_TRIPLET = $(or $(shell $(CC) -dumpmachine 2>/dev/null),$(shell uname -m)-linux-gnu)
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BUILD := build
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool

# The agent (DESIGN.md §3): user/main.c and cmd_<name>.c (flags, wiring);
# user/core the analysis core, user/record the recorder's units, user/out
# the output sinks.
USER_DIRS := user user/core user/record user/out user/live user/export
USER_INCLUDES := $(addprefix -I,$(USER_DIRS))
# OTLP export: the OpenTelemetry project's .proto files (proto/), compiled by
# protoc-c into build/gen, packed with libprotobuf-c.
OTLP_PROTOS := $(addprefix proto/opentelemetry/proto/,common/v1/common.proto \
	resource/v1/resource.proto trace/v1/trace.proto collector/trace/v1/trace_service.proto)
OTLP_GEN_C := $(patsubst proto/%.proto,$(BUILD)/gen/%.pb-c.c,$(OTLP_PROTOS))
OTLP_GEN_H := $(OTLP_GEN_C:.c=.h)
OTLP_GEN_OBJS := $(OTLP_GEN_C:.c=.o)
CFLAGS_COMMON := -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
	-Iinclude -I$(BUILD) -I$(BUILD)/gen $(USER_INCLUDES) -D_GNU_SOURCE
CFLAGS ?= -O2 -g
# libstdc++ by its soname: its demangler is all we use, and the runtime is
# on every box (no g++ needed)
LIBSTDCXX := -l:libstdc++.so.6
# what the core library (user/core) links: HPACK, C++ names
CORE_LIBS := -lnghttp2 $(LIBSTDCXX)
LDLIBS := -lbpf -ldw -lelf -lz -lpthread -lm -lmicrohttpd -lprotobuf-c -ljson-c -lcurl $(CORE_LIBS)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

AGENT_SRCS := $(wildcard $(addsuffix /*.c,$(USER_DIRS)))
USER_HDRS := $(wildcard $(addsuffix /*.h,$(USER_DIRS)))
AGENT_OBJS := $(patsubst user/%.c,$(BUILD)/user/%.o,$(AGENT_SRCS))
# What unit tests link: everything but the CLI and the BPF loader.
LIB_SRCS := $(wildcard user/core/*.c user/out/*.c)
LIB_SAN_OBJS := $(patsubst user/%.c,$(BUILD)/san/%.o,$(LIB_SRCS))
# The whole agent under ASan+UBSan, for the sanitized integration test.
AGENT_SAN_OBJS := $(patsubst user/%.c,$(BUILD)/san/%.o,$(AGENT_SRCS))

UNIT_SRCS := $(filter-out tests/unit/test_cupti.c,$(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

# The CUPTI shim needs the CUDA toolkit's CUPTI headers and library.
CUDA_HOME ?= /usr/local/cuda
HAVE_CUPTI := $(wildcard $(CUDA_HOME)/include/cupti.h)
CUPTI_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so))
TOOLS := $(BUILD)/liblatsplit-engine.so $(BUILD)/mock-engine $(BUILD)/loadgen $(BUILD)/runq-load \
	 $(BUILD)/flame-capture $(BUILD)/live-replay $(BUILD)/event-fields $(BUILD)/llama-shaped
ifneq ($(HAVE_CUPTI),)
ifneq ($(CUPTI_LIB),)
TOOLS += $(BUILD)/liblatsplit-cupti.so $(BUILD)/cupti-emit
UNIT_CUPTI := $(BUILD)/tests/test_cupti
endif
endif
BENCH_BINS := $(BUILD)/bench-capture $(BUILD)/gen-capture $(BUILD)/bench-symbolize $(BUILD)/syscall-loop $(BUILD)/floor-probe $(BUILD)/io-loop

# `make V=1` shows the full commands.
Q := $(if $(V),,@)
msg = $(if $(V),,@printf '  %-8s %s\n' $(1) $(2))

.SECONDARY:
.PHONY: cupti-note fuzz all deps test-deps test test-fresh unit integration demo bench vmlinux clean install
all: $(BUILD)/latsplit $(TOOLS) cupti-note

cupti-note:
	@$(if $(HAVE_CUPTI),$(if $(CUPTI_LIB),,echo "  note: no libcupti.so under $(CUDA_HOME): skipping liblatsplit-cupti.so (set CUDA_HOME)"),echo "  note: no CUDA toolkit at $(CUDA_HOME) (set CUDA_HOME): skipping liblatsplit-cupti.so; everything else builds")

CUPTI_SRCS := user/cupti/shim.c user/cupti/translate.c
$(BUILD)/liblatsplit-cupti.so: $(CUPTI_SRCS) user/cupti/translate.h include/latsplit/engine.h | $(BUILD)
	$(call msg,LIB,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -I$(CUDA_HOME)/include -fPIC -shared -fvisibility=hidden \
		-o $@ $(CUPTI_SRCS) -L$(dir $(CUPTI_LIB)) -lcupti -Wl,-rpath,$(dir $(CUPTI_LIB)) -lpthread

$(BUILD)/cupti-emit: tests/helpers/cupti_emit.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -I$(CUDA_HOME)/include -o $@ $< -ldl

$(BUILD)/tests/test_cupti: tests/unit/test_cupti.c user/cupti/translate.c | $(BUILD)/tests
	$(call msg,LINK-SAN,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) -I$(CUDA_HOME)/include -Iuser/cupti -O1 -g $(SAN) -o $@ $^ -lcmocka

deps:
	@tools/install-deps.sh

# What the tests use beyond the build (no kernel or service on the host)
test-deps: deps
	@tools/install-test-deps.sh

$(BUILD) $(BUILD)/user $(BUILD)/san $(BUILD)/tests:
	@mkdir -p $@

# The objects that claim scratch records with atomic fetch-or (BPF v3,
# kernels >= 5.12; slot_claim): the socket object's syscall and uprobe
# programs can be preempted, and a Python walk (the switch's, a sample's,
# a GPU launch's uprobe) can come in between another's on its CPU.
$(BUILD)/sock.bpf.o $(BUILD)/sched.bpf.o $(BUILD)/profile.bpf.o $(BUILD)/engine.bpf.o: BPF_CPU := -mcpu=v3
$(BUILD)/%.bpf.o: bpf/%.bpf.c bpf/*.bpf.h include/latsplit/*.h vmlinux/$(ARCH)/vmlinux.h | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf $(BPF_CPU) -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
		-Iinclude -Ivmlinux/$(ARCH) -I/usr/include/$(ARCH_TRIPLET) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/user/%.o: user/%.c $(SKELS) include/latsplit/*.h $(USER_HDRS) $(OTLP_GEN_H) | $(BUILD)/user
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -c $< -o $@

# one protoc-c run writes every generated file
$(OTLP_GEN_C) $(OTLP_GEN_H) &: $(OTLP_PROTOS)
	$(call msg,PROTOC-C,$(BUILD)/gen)
	$(Q)mkdir -p $(BUILD)/gen
	$(Q)protoc-c --c_out=$(BUILD)/gen -Iproto $(OTLP_PROTOS)

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c $(OTLP_GEN_H)
	$(call msg,CC,$@)
	$(Q)$(CC) -I$(BUILD)/gen $(CFLAGS) -c $< -o $@

$(BUILD)/latsplit: $(AGENT_OBJS) $(OTLP_GEN_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/san/%.o: user/%.c $(SKELS) include/latsplit/*.h $(USER_HDRS) $(OTLP_GEN_H) | $(BUILD)/san
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_COMMON) -O1 -g $(SAN) -c $< -o $@

$(BUILD)/san/latsplit: $(AGENT_SAN_OBJS) $(OTLP_GEN_OBJS)
	$(call msg,LINK-SAN,$@)
	$(Q)$(CC) -O1 -g $(SAN) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(LIB_SAN_OBJS) | $(BUILD)/tests
	$(call msg,LINK-SAN,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) -O1 -g $(SAN) -o $@ $< $(LIB_SAN_OBJS) -lcmocka -lz -lm -lelf $(CORE_LIBS)

# Record's Python naming, tested without BPF against a forged interpreter
# library that the test maps (tests/helpers/fakepy.c).
$(BUILD)/fakepy/libpython3.11.so: tests/helpers/fakepy.c
	$(call msg,LIB,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -fPIC -o $@ $<

$(BUILD)/tests/test_pyrecord: tests/unit/test_pyrecord.c $(BUILD)/san/record/python.o $(LIB_SAN_OBJS) \
		$(BUILD)/fakepy/libpython3.11.so | $(BUILD)/tests
	$(call msg,LINK-SAN,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) -O1 -g $(SAN) -o $@ $< $(BUILD)/san/record/python.o $(LIB_SAN_OBJS) \
		-L$(BUILD)/fakepy -l:libpython3.11.so -Wl,-rpath,$(abspath $(BUILD)/fakepy) \
		-lcmocka -lelf -lz -lm $(CORE_LIBS)

# The unwind tables' builder, against this test's own CFI and mappings.
$(BUILD)/tests/test_ehtab: tests/unit/test_ehtab.c $(BUILD)/san/record/ehtab.o $(LIB_SAN_OBJS) | $(BUILD)/tests
	$(call msg,LINK-SAN,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) -O1 -g $(SAN) -o $@ $< $(BUILD)/san/record/ehtab.o $(LIB_SAN_OBJS) \
		-lcmocka -ldw -lelf -lz -lm $(CORE_LIBS)

# The engines' event rings: the test is the engine and the reader both.
$(BUILD)/tests/test_evring: tests/unit/test_evring.c $(BUILD)/san/record/evring.o $(LIB_SAN_OBJS) \
		| $(BUILD)/tests
	$(call msg,LINK-SAN,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) -O1 -g $(SAN) -o $@ $< $(BUILD)/san/record/evring.o $(LIB_SAN_OBJS) \
		-lcmocka -lelf -lz -lm $(CORE_LIBS)

$(BUILD)/liblatsplit-engine.so: user/engine/engine.c include/latsplit/engine.h | $(BUILD)
	$(call msg,LIB,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -fno-omit-frame-pointer -fPIC -shared -fvisibility=hidden -o $@ $<

# The mock engine fires its events through the library, by absolute rpath, as
# a Python engine would through ctypes.
$(BUILD)/mock-engine: tools/mock-engine/*.c tools/mock-engine/mock.h $(BUILD)/liblatsplit-engine.so | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -fno-omit-frame-pointer -DLATSPLIT_ENGINE_NO_PROBES -o $@ tools/mock-engine/*.c \
		-L$(BUILD) -llatsplit-engine -Wl,-rpath,'$$ORIGIN' -lpthread -lm

$(BUILD)/runq-load: tests/helpers/runq_load.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $< -lpthread

$(BUILD)/event-fields: tests/helpers/event_fields.c include/latsplit/events.h | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -Iinclude -o $@ $<

$(BUILD)/loadgen: tools/loadgen.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $< -lpthread

# a llama.cpp-shaped CPU server (its own truth; frame pointers for stacks)
$(BUILD)/llama-shaped: tools/servers/llama-shaped.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -fno-omit-frame-pointer -o $@ $< -lpthread

# the analysis library (core + out), for helpers and benches that need more
# than the capture format
LIB_OBJS := $(patsubst user/%.c,$(BUILD)/user/%.o,$(LIB_SRCS))
$(BUILD)/bench-capture: tests/bench/bench_capture.c $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ -lelf -lz -lpthread -lm $(CORE_LIBS)

FUZZ_SECONDS ?= 60
# as the build's own sources are compiled (gnu11 with _GNU_SOURCE: memmem and
# friends declared), an undeclared function an error, not a pointer cut to int
FUZZ_CFLAGS := -std=gnu11 -g -O1 -Iinclude $(USER_INCLUDES) -D_GNU_SOURCE \
	-Werror=implicit-function-declaration -Werror=int-conversion \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
$(BUILD)/fuzz-http: tests/fuzz/fuzz_http.c user/core/http.c user/core/http.h user/core/redact.c | $(BUILD)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_http.c user/core/http.c user/core/redact.c

# Everything that reads a capture (reader, formatters, analysis core).
$(BUILD)/fuzz-capture: tests/fuzz/fuzz_capture.c $(LIB_SRCS) $(USER_HDRS) include/latsplit/*.h | $(BUILD)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_capture.c $(LIB_SRCS) -lz -lelf -lm \
		-lpthread $(CORE_LIBS)

$(BUILD)/fuzz-h2: tests/fuzz/fuzz_h2.c user/core/h2.c user/core/h2.h user/core/redact.c | $(BUILD)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_h2.c user/core/h2.c user/core/redact.c \
		user/core/http.c -lnghttp2

fuzz: $(BUILD)/fuzz-http $(BUILD)/fuzz-h2 $(BUILD)/fuzz-capture
	@mkdir -p $(BUILD)/fuzz-http-corpus $(BUILD)/fuzz-h2-corpus $(BUILD)/fuzz-capture-corpus
	$(BUILD)/fuzz-http -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(BUILD)/fuzz-http-corpus tests/fuzz/seeds
	$(BUILD)/fuzz-h2 -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(BUILD)/fuzz-h2-corpus tests/fuzz/seeds-h2
	$(BUILD)/fuzz-capture -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
		$(BUILD)/fuzz-capture-corpus tests/fuzz/capture-seeds

$(BUILD)/flame-capture: tests/helpers/flame_capture.c $(BUILD)/user/core/capture.o $(BUILD)/user/core/columns.o $(BUILD)/user/core/redact.o $(BUILD)/user/core/http.o
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ -lz -lpthread

$(BUILD)/live-replay: tests/helpers/live_replay.c $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ -lelf -lz -lpthread -lm $(CORE_LIBS)

$(BUILD)/gen-capture: tests/bench/gen_capture.c $(BUILD)/user/core/capture.o $(BUILD)/user/core/columns.o $(BUILD)/user/core/order.o $(BUILD)/user/core/redact.o $(BUILD)/user/core/http.o
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ -lz -lpthread

$(BUILD)/bench-symbolize: tests/bench/bench_symbolize.c $(BUILD)/user/core/capture.o $(BUILD)/user/core/columns.o $(BUILD)/user/core/redact.o $(BUILD)/user/core/http.o $(BUILD)/user/core/symbolize.o $(BUILD)/user/core/procfile.o
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ -lelf -lz -lpthread $(CORE_LIBS)

$(BUILD)/syscall-loop: tests/bench/syscall_loop.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $<

$(BUILD)/io-loop: tests/bench/io_loop.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $<

$(BUILD)/floor-probe: tests/bench/floor.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $< -lbpf

# deps first, then the build in a second make: with -j the prerequisites of
# one target may run in parallel, and nothing may build before gcc exists.
test: test-deps
	@$(MAKE) --no-print-directory all $(UNIT_BINS) $(UNIT_CUPTI) $(BUILD)/fuzz-http $(BUILD)/fuzz-h2 $(BUILD)/fuzz-capture \
		$(BUILD)/san/latsplit $(BENCH_BINS)
	@tests/run.sh

# The README's two set-up commands in a minimal Debian 12 chroot, then in a
# minimal Debian 13 one (needs root; SUITE=bookworm or SUITE=trixie: that one).
test-fresh: test-deps
	@if [ -n "$$SUITE" ]; then tools/test-fresh.sh; \
	else SUITE=bookworm tools/test-fresh.sh && SUITE=trixie tools/test-fresh.sh; fi

unit: $(UNIT_BINS) fuzz
	@tests/run.sh --unit-only

demo: deps
	@$(MAKE) --no-print-directory all
	@VLLM=$(VLLM) tools/demo.sh

bench: test-deps
	@$(MAKE) --no-print-directory all $(BENCH_BINS)
	@tests/bench/run.sh

vmlinux:
	mkdir -p vmlinux/$(ARCH)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h

PREFIX ?= /usr/local
install: all
	install -D -m 0755 $(BUILD)/latsplit $(DESTDIR)$(PREFIX)/bin/latsplit

clean:
	rm -rf $(BUILD)
