# kintfs build, test and benchmark targets.
GO       ?= go
BIN      ?= bin/kintfs
# the dev chain's own program, beside kintfs, where kintfs looks for it first
DEVBIN   := $(dir $(BIN))kintfs-devchain
MNT      ?= $(HOME)/kint
# FUZZTIME is a count of inputs, not a duration: with a duration, Go's fuzzing coordinator
# (before Go 1.27, golang/go#75804) can fail a run that found nothing with "context deadline
# exceeded" at its end, on a loaded machine.
FUZZTIME ?= 20000x
PREFIX   ?= /usr/local
SBINDIR  ?= /sbin
DESTDIR  ?=
# the source commit kintfs version prints
COMMIT   ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
LDFLAGS  ?= -X main.commit=$(COMMIT)

.PHONY: build cross test test-unit stress run bench uring-probe fuzz vet lint contracts contracts-check clean install man

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kintfs
	$(GO) build -o $(DEVBIN) ./cmd/kintfs/devchain

# The manual page, made from the same table as kintfs --help.
man: build
	mkdir -p docs
	$(BIN) man > docs/kintfs.1

# kintfs and kintfs-devchain on PATH, mount.kintfs for fstab and mount(8), the manual page and
# the bash completion.
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SBINDIR) $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/kintfs
	install -m 0755 $(DEVBIN) $(DESTDIR)$(PREFIX)/bin/kintfs-devchain
	ln -sf $(PREFIX)/bin/kintfs $(DESTDIR)$(SBINDIR)/mount.kintfs
	$(BIN) man > $(DESTDIR)$(PREFIX)/share/man/man1/kintfs.1
	$(BIN) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/kintfs
	@echo "installed $(DESTDIR)$(PREFIX)/bin/kintfs, kintfs-devchain and $(DESTDIR)$(SBINDIR)/mount.kintfs -> $(PREFIX)/bin/kintfs"

# Cross-compile and vet for the other platforms: macOS (macFUSE) on both architectures and
# 64-bit ARM Linux, without cgo.
CROSS ?= darwin/arm64 darwin/amd64 linux/arm64
cross:
	@set -e; for t in $(CROSS); do \
		echo "build and vet for $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/kintfs; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/kintfs/devchain; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) vet ./...; \
	done

# The whole suite: vet and staticcheck, unit and mount tests with the race detector, the
# end-to-end integration tests against a real dev chain and real FUSE mounts, then a short
# fuzz pass.
test: lint
	$(GO) test -race -count=1 -timeout 40m ./...
	$(MAKE) fuzz

# The randomized flush model at length: 100,000 steps of changes interleaved with paused,
# failed and finished flushes and restarts, against a real dev chain.
stress:
	KINT_MODEL_OPS=$${KINT_MODEL_OPS:-100000} $(GO) test -count=1 -timeout 0 -run '^TestSealingModel$$' -v ./replica/

test-unit:
	$(GO) test -count=1 ./seal/... ./replica/... ./chain/...

vet:
	$(GO) vet ./...

# staticcheck at a pinned version (the module proxy serves it; nothing to install).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint: vet
	$(GO) run $(STATICCHECK) ./...

# Mount a vault on the embedded development chain (not Base) at $(MNT).
run:
	@echo "building $(BIN): the first build compiles go-ethereum and takes a few minutes; later ones take seconds"
	@$(MAKE) --no-print-directory build
	mkdir -p $(MNT)
	$(BIN) mount --dev $(MNT)

fuzz:
	@set -e; for t in $$(grep -rhoE '^func (Fuzz[A-Za-z0-9_]+)' --include='*_test.go' . | sed 's/func //' | sort -u); do \
		pkg=$$(grep -rlE "^func $$t\(" --include='*_test.go' . | head -1 | xargs dirname); \
		echo "fuzz $$t in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

bench: build
	bash scripts/bench.sh

# FUSE over io_uring against classic /dev/fuse on a trivial file system (Linux, as root: it
# turns /sys/module/fuse/parameters/enable_uring on for its mount and back as it was).
# URING_PROBE_FLAGS passes options, e.g. -rounds 21 -batch 1000 -taskrun defer.
URING_PROBE_FLAGS ?=
uring-probe:
	$(GO) build -o bin/uringprobe ./scripts/uringprobe
	bin/uringprobe $(URING_PROBE_FLAGS)

clean:
	rm -rf bin

-include Makefile.contracts
