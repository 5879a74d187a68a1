# execd -- plain make.  `make` builds, `make run` starts the daemon,
# `make test` runs everything CI runs, `make bench` measures.

STD	= -std=c11 -D_GNU_SOURCE
WARN	= -Wall -Wextra -Wshadow -Wpointer-arith -Wcast-qual \
	  -Wstrict-prototypes -Wmissing-prototypes -Wmissing-declarations \
	  -Wformat=2 -Wwrite-strings -Wundef -Wvla -Wno-unused-parameter
HARDEN	= -fstack-protector-strong -fPIE -D_FORTIFY_SOURCE=2
OPT	?= -O2 -g
PKGS	= libmicrohttpd libzmq jansson libcrypto libseccomp yaml-0.1 x11 xtst \
	  libpng
PIE_LD	= -pie
# STATIC=1 (what `make static` runs after scripts/static-deps.sh): one
# static-pie binary in build/static, with the libmicrohttpd and libzmq that
# script builds under build/static/deps and Debian's other .a archives.
ifdef STATIC
STATIC_DEPS = $(CURDIR)/build/static/deps/prefix
PKG_ENV	= PKG_CONFIG_PATH=$(STATIC_DEPS)/lib/pkgconfig
PKG_OPT	= --static
# Unused sections dropped: a smaller text is a smaller idle RSS.
PIE_LD	= -static-pie -Wl,--gc-sections
CFLAGS	+= -DEXECD_STATIC -ffunction-sections -fdata-sections
B	?= build/static
STATIC_STAMP = $(STATIC_DEPS)/.built
endif
PKG_CFLAGS := $(shell $(PKG_ENV) pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell $(PKG_ENV) pkg-config $(PKG_OPT) --libs $(PKGS) \
	2>/dev/null)

CFLAGS	+= $(STD) $(WARN) $(HARDEN) $(OPT) $(PKG_CFLAGS) -pthread -MMD -MP
LDFLAGS	+= $(PIE_LD) -pthread -Wl,-z,relro,-z,now
LDLIBS	+= $(PKG_LIBS) -lm

ifeq ($(WERROR),1)
CFLAGS	+= -Werror
endif

# make SANITIZER=address|undefined builds into its own tree; so does
# FUZZ=1 (clang, libFuzzer instrumentation), which `make fuzz` uses.
ifdef FUZZ
CC	= clang
CFLAGS	+= -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=all
LDFLAGS	+= -fsanitize=address,undefined
B	?= build/fuzz
else ifdef SANITIZER
CFLAGS	+= -fsanitize=$(SANITIZER) -fno-omit-frame-pointer \
	   -fno-sanitize-recover=all -O1
LDFLAGS	+= -fsanitize=$(SANITIZER)
B	?= build/$(SANITIZER)
else
B	?= build
endif

# The libraries know nothing of execd; execd links them.
LIBS	= sse fs kernelproto
LIB_A	= $(foreach l,$(LIBS),$(B)/lib$(l).a)
EXECD_SRC = $(wildcard execd/*.c execd/*/*.c execd/*/*/*.c)
EXECD_OBJ = $(EXECD_SRC:%.c=$(B)/obj/%.o)
CORE_OBJ = $(filter-out $(B)/obj/execd/main.o,$(EXECD_OBJ))
UNIT_SRC = $(wildcard tests/unit/t_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
FUZZ_T	= $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
REPLAY_BIN = $(FUZZ_T:%=$(B)/tests/replay_%)

.PHONY: all deps run check test test-one bench fuzz fuzz-run valgrind format \
	lint clean static
all: $(B)/execd $(B)/execd-repl-kernel

# One static-pie execd that runs in any Linux root filesystem (and the
# REPL kernel beside it); the two libraries Debian has no usable archive
# for are built once, from Debian's source packages, and reused.
static:
	@sh scripts/static-deps.sh build/static/deps
	@$(MAKE) --no-print-directory STATIC=1 B=build/static build/static/execd \
	    build/static/execd-repl-kernel

# Rebuild everything when the flags change (like Redis's .make-settings).
$(B)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(CFLAGS) $(LDFLAGS)' | cmp -s - $@ || \
	    echo '$(CC) $(CFLAGS) $(LDFLAGS)' > $@
FORCE:

$(B)/obj/%.o: %.c $(B)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

define lib_rule
$(B)/lib$(1).a: $(patsubst %.c,$(B)/obj/%.o,$(wildcard $(1)/*.c))
	@rm -f $$@
	$(AR) rcs $$@ $$^
endef
$(foreach l,$(LIBS),$(eval $(call lib_rule,$(l))))

$(B)/execd: $(EXECD_OBJ) $(LIB_A) $(STATIC_STAMP)
	$(CC) $(LDFLAGS) -o $@ $(EXECD_OBJ) $(LIB_A) $(LDLIBS)

# A Jupyter kernel that drives a REPL (docs/kernels.md); kernelproto only.
RK_OBJ	= $(patsubst %.c,$(B)/obj/%.o,$(wildcard repl/*.c))
$(B)/execd-repl-kernel: $(RK_OBJ) $(B)/libkernelproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/tests/t_%: $(B)/obj/tests/unit/t_%.o $(CORE_OBJ) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(CORE_OBJ) $(LIB_A) $(LDLIBS)

# A target may #include the .c file of a static function it drives; the
# copy it holds comes first on the line and wins over the one in CORE_OBJ.
FUZZ_LDFLAGS = -Wl,--allow-multiple-definition

$(B)/tests/replay_%: $(B)/obj/tests/fuzz/fuzz_%.o $(B)/obj/tests/fuzz/replay.o \
    $(CORE_OBJ) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(FUZZ_LDFLAGS) -o $@ $^ $(LDLIBS)

# Fuzzers proper need clang's libFuzzer: `make fuzz`, then run one, e.g.
# mkdir -p build/fuzz/new && build/fuzz/fuzz_body -max_total_time=60 \
#     build/fuzz/new tests/fuzz/corpus/body   (new inputs go to the first dir)
fuzz:
	@$(MAKE) --no-print-directory FUZZ=1 $(FUZZ_T:%=build/fuzz/fuzz_%)
build/fuzz/fuzz_%: build/fuzz/obj/tests/fuzz/fuzz_%.o $(CORE_OBJ) $(LIB_A)
	$(CC) $(LDFLAGS) $(FUZZ_LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# make fuzz-run SECONDS=N: every target for N seconds, one after another,
# from its corpus; new inputs go to build/fuzz/new/<t>, never into the
# repository, and a crash (saved as build/fuzz/crash/<t>/crash-*) fails.
SECONDS	?= 60
fuzz-run: fuzz
	@rc=0; for t in $(FUZZ_T); do \
	    mkdir -p build/fuzz/new/$$t build/fuzz/crash/$$t; \
	    echo "== fuzz $$t ($(SECONDS) s)"; \
	    build/fuzz/fuzz_$$t -max_total_time=$(SECONDS) -timeout=25 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix=build/fuzz/crash/$$t/ \
		build/fuzz/new/$$t tests/fuzz/corpus/$$t \
		>build/fuzz/new/$$t.log 2>&1 || { rc=1; \
		echo "FAIL fuzz $$t: see build/fuzz/new/$$t.log"; \
		tail -n 30 build/fuzz/new/$$t.log; continue; }; \
	    grep -E '^stat::number_of_executed_units' build/fuzz/new/$$t.log \
		| sed "s/^/PASS fuzz $$t /"; \
	done; exit $$rc

deps:
	@sh scripts/deps.sh

run:
	@sh scripts/deps.sh run
	@$(MAKE) --no-print-directory all
	exec $(B)/execd $(ARGS)

# One build and one pass of every test, in the tree $(B); the bench's
# kernel driver is built too, so that it never falls behind the code.
check: $(B)/execd $(B)/execd-repl-kernel $(UNIT_BIN) $(REPLAY_BIN) $(B)/bench/kbench
	@sh tests/run.sh $(B)

# What CI runs: the suite plain, under ASan (with LeakSanitizer) and UBSan.
test: deps
	@sh tests/all.sh

bench: deps
	@$(MAKE) --no-print-directory all $(B)/bench/kbench
	@$(MAKE) --no-print-directory static
	@sh scripts/deps.sh bench
	@sh bench/run.sh $(B)

# Drives execd's kernel manager directly, for the kernel rows of the bench.
$(B)/bench/kbench: $(B)/obj/bench/kbench.o $(CORE_OBJ) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

valgrind: $(B)/execd $(UNIT_BIN) $(REPLAY_BIN)
	@VALGRIND=1 sh tests/run.sh $(B)

format:
	clang-format -i $(shell find execd -name '*.[ch]') sse/*.[ch] fs/*.[ch] util/*.h tests/unit/*.c \
	    tests/fuzz/*.c

# cppcheck reads no system headers; libpng's, under their own -I, stop
# at an #error without limits.h.
LINT_CFLAGS = $(filter-out $(shell pkg-config --cflags-only-I libpng \
	2>/dev/null),$(PKG_CFLAGS))
lint:
	cppcheck --quiet --enable=warning,portability --error-exitcode=1 \
	    --inline-suppr -D_GNU_SOURCE $(LINT_CFLAGS) \
	    --include=tests/cppcheck.h \
	    execd sse fs kernelproto util repl
	/usr/bin/python3 -m pyflakes tests bench

clean:
	rm -rf build

-include $(shell find $(B) -name '*.d' 2>/dev/null)
